import { grown } from '../model/growable.js';
import { doubledSlots, placeSlot } from '../model/hash-slots.js';

/**
 * Token ids from code units, without a string per token: the index build meets ~10M token
 * occurrences at 1M messages, and a JS string for each plus a Map lookup hashing it took 2.4 s of
 * a 3.9 s build (bench/RESULTS.md, issue 10 session 8). Ids are given in order of first
 * occurrence, as a Map's `size` would give them, so the index is the same either way.
 */
export class TokenInterner {
  /** the code units of every token, id after id */
  // small to start with (an import holds an interner an organization), doubled as needed
  private pool = new Uint16Array(1 << 12);
  /** where token `id` starts in `pool`; starts[size] is the pool's length */
  private starts = new Uint32Array(1 << 9);
  /** (hash, id + 1) pairs, at most half full (model/hash-slots.ts) */
  private slots = new Uint32Array(2 << 9);
  size = 0;

  /** The id of the token `codes[from, to)`, added when new. */
  idOf(codes: Uint16Array, from: number, to: number): number {
    let h = 0x811c9dc5; // FNV-1a over code units
    for (let i = from; i < to; i++) h = Math.imul(h ^ codes[i], 0x01000193);
    h >>>= 0;
    const slots = this.slots;
    const mask = (slots.length >>> 1) - 1;
    const pool = this.pool;
    const starts = this.starts;
    const len = to - from;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const stored = slots[2 * slot + 1];
      if (stored === 0) break;
      if (slots[2 * slot] !== h) continue;
      const id = stored - 1;
      const at = starts[id];
      if (starts[id + 1] - at !== len) continue;
      let k = 0;
      while (k < len && pool[at + k] === codes[from + k]) k++;
      if (k === len) return id;
    }
    return this.add(codes, from, to, h);
  }

  /** The id of a token held as a string (the tokenizer's rare plain path). */
  idOfString(s: string): number {
    const codes = new Uint16Array(s.length);
    for (let i = 0; i < s.length; i++) codes[i] = s.charCodeAt(i);
    return this.idOf(codes, 0, s.length);
  }

  /** The token of each id, as a string. */
  tokens(): string[] {
    const out: string[] = new Array(this.size);
    for (let id = 0; id < this.size; id++) out[id] = this.token(id);
    return out;
  }

  /** The token of `id` (below size), as a string. */
  token(id: number): string {
    return fromCodes(this.pool, this.starts[id], this.starts[id + 1]);
  }

  /** The tokens as strings, id by id: a Map whose insertion order is the id order. */
  toMap(): Map<string, number> {
    return new Map(this.tokens().map((token, id) => [token, id]));
  }

  private add(codes: Uint16Array, from: number, to: number, h: number): number {
    const id = this.size++;
    const len = to - from;
    if (id + 2 > this.starts.length) this.starts = grown(this.starts, this.starts.length * 2);
    const at = this.starts[id];
    if (at + len > this.pool.length) {
      const pool = new Uint16Array(Math.max(this.pool.length * 2, at + len));
      pool.set(this.pool.subarray(0, at));
      this.pool = pool;
    }
    this.pool.set(codes.subarray(from, to), at);
    this.starts[id + 1] = at + len;
    placeSlot(this.slots, h, id + 1);
    if (this.size * 4 > this.slots.length) this.slots = doubledSlots(this.slots);
    return id;
  }
}

/**
 * codes[from, to) as a string, code unit for code unit (no decoder: nothing is replaced); in
 * pieces of 4096, under the engine's limit on call arguments. The tokenizer's too.
 */
export function fromCodes(codes: Uint16Array, from: number, to: number): string {
  if (to - from <= 64) return String.fromCharCode.apply(null, codes.subarray(from, to) as unknown as number[]);
  let s = '';
  for (let i = from; i < to; i += 4096)
    s += String.fromCharCode.apply(null, codes.subarray(i, Math.min(to, i + 4096)) as unknown as number[]);
  return s;
}
