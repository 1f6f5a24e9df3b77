import { grown } from './growable.js';

/**
 * Message ids as UTF-16 code units, one after another, with where each ends: the import's ids
 * without a JS string a message. At 10M messages the strings (and the arrays holding them) were
 * ~0.5 GB of heap that every collection of the import's main thread visited (bench/RESULTS.md,
 * session 13). Code units, not UTF-8: an id compares and sorts exactly as its JS string does,
 * lone surrogates included.
 */
export class IdColumn {
  // small to start with (an import holds a column an organization), doubled as needed
  private codes = new Uint16Array(1 << 12);
  /** id i is codes[i === 0 ? 0 : ends[i - 1] .. ends[i]) */
  private ends = new Uint32Array(256);
  private used = 0;
  count = 0;

  /** Room for `ids` more ids of `units` code units in all, made at once (see StringColumnBuilder.reserve). */
  reserve(ids: number, units: number): void {
    if (this.used + units > this.codes.length) this.codes = grown(this.codes, this.used + units, this.used);
    if (this.count + ids > this.ends.length) this.ends = grown(this.ends, this.count + ids, this.count);
  }

  /** Appends `s`, or its code units from .. to - 1 (an id inside a longer string, without slicing it). */
  push(s: string, from = 0, to = s.length): void {
    const n = to - from;
    if (this.used + n > this.codes.length)
      this.codes = grown(this.codes, Math.max(this.codes.length * 2, this.used + n), this.used);
    if (this.count === this.ends.length) this.ends = grown(this.ends, Math.max(16, this.ends.length * 2));
    const codes = this.codes;
    let at = this.used;
    for (let k = from; k < to; k++) codes[at++] = s.charCodeAt(k);
    this.used = at;
    this.ends[this.count++] = at;
  }

  /** Lets go of the ids (the build, once it has copied them): an empty column from here on. */
  release(): void {
    this.codes = new Uint16Array(0);
    this.ends = new Uint32Array(1);
    this.used = this.count = 0;
  }

  /** Code units held (the ids' total length). */
  get unitCount(): number {
    return this.used;
  }

  start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1];
  }

  end(i: number): number {
    return this.ends[i];
  }

  /** The code units (valid until the next push). */
  units(): Uint16Array {
    return this.codes;
  }

  /** Id i as a string. */
  at(i: number): string {
    const from = this.start(i),
      to = this.ends[i];
    let s = '';
    // in slices: fromCharCode's arguments are bounded (ids are short; this is the general case)
    for (let k = from; k < to; k += 4096)
      s += String.fromCharCode.apply(null, this.codes.subarray(k, Math.min(to, k + 4096)) as unknown as number[]);
    return s;
  }

  /** FNV-1a over id i's code units (the hash IdSet keys by). */
  hash(i: number): number {
    const codes = this.codes;
    let h = 0x811c9dc5;
    for (let k = this.start(i), end = this.ends[i]; k < end; k++) h = Math.imul(h ^ codes[k], 0x01000193);
    return h >>> 0;
  }

  /** Whether ids i and j are the same. */
  same(i: number, j: number): boolean {
    const a = this.start(i),
      b = this.start(j);
    const n = this.ends[i] - a;
    if (this.ends[j] - b !== n) return false;
    const codes = this.codes;
    for (let k = 0; k < n; k++) if (codes[a + k] !== codes[b + k]) return false;
    return true;
  }
}
