/**
 * The term and pair dictionaries of a loaded index, read in place from shared memory: a token is
 * found by hashing its UTF-8 bytes into an open-addressing table over the snapshot's token column,
 * a pair by binary search in its sorted keys. Every thread reads the same sections, so a reload
 * rebuilds no per-thread Map (measured 20-71 ms for the 44k words of the 1M bench organization,
 * on every serving thread and the main thread, each reload) and no thread holds a copy.
 */

import type { KeyColumn } from './org-index.js';

/** What the query reads of the term dictionary (a built index's Map satisfies it too). */
export interface TokenLookup {
  readonly size: number;
  get(token: string): number | undefined;
}

/** What the query reads of the pair dictionary: (a * vocabulary + b) -> pseudo-token id. */
export interface PairLookup {
  readonly size: number;
  get(key: number): number | undefined;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function hashBytes(bytes: Uint8Array, from: number, to: number): number {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i], FNV_PRIME);
  return h >>> 0;
}

/**
 * Slots for `tokens` entries: a power of two, filled to at most three quarters. A lookup is a few
 * probes more than at half (a miss ~8.5 at the worst, against ~2.5), a few for each term of a
 * request; the table is half the size: 256 KiB less at 1M (44k words: 65,536 slots, not 131,072).
 */
export function tokenTableSize(tokens: number): number {
  let n = 8;
  while (3 * n < 4 * tokens) n *= 2;
  return n;
}

/** A token table's slots: 16 bits while every token id + 1 fits (see tokenTableType), else 32. */
export type TokenTable = Uint16Array | Uint32Array;

/**
 * The slot type of the table of `tokens` tokens: Uint16Array below 65,535 tokens (slot values are
 * id + 1), which holds a small organization's table in half the bytes (~2 KiB of a 100-message
 * organization's ~40) and the 1M organization's 44k words in 128 KiB instead of 256.
 */
export function tokenTableType(tokens: number): 'Uint16Array' | 'Uint32Array' {
  return tokens < 0xffff ? 'Uint16Array' : 'Uint32Array';
}

/**
 * The hash table of a token column: slot -> token id + 1 (0 empty), in a SharedArrayBuffer so the
 * threads that get the index share it (or in `table`, zeroed, of tokenTableSize slots and
 * tokenTableType's type). Linear probing; the column holds each token once.
 */
export function buildTokenTable(bytes: Uint8Array, offsets: KeyColumn, table?: TokenTable): TokenTable {
  const tokens = offsets.length - 1;
  const size = tokenTableSize(tokens);
  const type = tokenTableType(tokens);
  table ??=
    type === 'Uint16Array'
      ? new Uint16Array(new SharedArrayBuffer(size * 2))
      : new Uint32Array(new SharedArrayBuffer(size * 4));
  if (table.length !== size) throw new Error(`index: a token table of ${size} slots, not ${table.length}`);
  if (table instanceof Uint16Array !== (type === 'Uint16Array'))
    throw new Error(`index: a token table of ${type}, not ${table.constructor.name}`);
  const mask = size - 1;
  for (let t = 0; t < tokens; t++) {
    let slot = hashBytes(bytes, offsets[t], offsets[t + 1]) & mask;
    while (table[slot] !== 0) slot = (slot + 1) & mask;
    table[slot] = t + 1;
  }
  return table;
}

/**
 * Writes the UTF-8 form of `s` into `out` (as Buffer.from(s, 'utf8') would), returning its length,
 * or -1 when `s` holds a lone surrogate (no token of a loaded index does: the column was written
 * from valid UTF-8, so such a string is never one of its tokens) or `out` is too short.
 */
function encodeUtf8(s: string, out: Uint8Array): number {
  let n = 0;
  const cap = out.length;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      if (n + 1 > cap) return -1;
      out[n++] = c;
    } else if (c < 0x800) {
      if (n + 2 > cap) return -1;
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c > 0xdbff || d < 0xdc00 || d > 0xdfff || n + 4 > cap) return -1;
      c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
      i++;
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 63);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    } else {
      if (n + 3 > cap) return -1;
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    }
  }
  return n;
}

// One looked-up token's bytes at a time (lookups are synchronous); grown for a longer token.
let scratch = new Uint8Array(1024);

export class SharedTokenDictionary implements TokenLookup {
  readonly size: number;
  private readonly mask: number;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly offsets: KeyColumn,
    private readonly table: TokenTable,
  ) {
    this.size = offsets.length - 1;
    this.mask = table.length - 1;
  }

  get(token: string): number | undefined {
    if (token.length * 3 > scratch.length) scratch = new Uint8Array(token.length * 4);
    const n = encodeUtf8(token, scratch);
    if (n < 0) return undefined;
    const { bytes, offsets, table, mask } = this;
    for (let slot = hashBytes(scratch, 0, n) & mask; ; slot = (slot + 1) & mask) {
      const entry = table[slot];
      if (entry === 0) return undefined;
      const t = entry - 1;
      const from = offsets[t];
      if (offsets[t + 1] - from !== n) continue;
      let k = 0;
      while (k < n && bytes[from + k] === scratch[k]) k++;
      if (k === n) return t;
    }
  }
}

/**
 * The pair dictionary's keys ascending, with their values, in shared memory (snapshots keep
 * insertion order), or in `sortedKeys` and `sortedValues` as given (of the keys' length).
 */
export function sortPairs(
  keys: Float64Array,
  values: Uint32Array,
  sortedKeys: Float64Array = new Float64Array(new SharedArrayBuffer(keys.length * 8)),
  sortedValues: Uint32Array = new Uint32Array(new SharedArrayBuffer(keys.length * 4)),
): { keys: Float64Array; values: Uint32Array } {
  if (sortedKeys.length !== keys.length || sortedValues.length !== keys.length)
    throw new Error('index: sorted pairs of another length than the pairs');
  const order = Array.from({ length: keys.length }, (_, i) => i).sort((a, b) => keys[a] - keys[b]);
  for (let i = 0; i < order.length; i++) {
    sortedKeys[i] = keys[order[i]];
    sortedValues[i] = values[order[i]];
  }
  return { keys: sortedKeys, values: sortedValues };
}

export class SharedPairDictionary implements PairLookup {
  readonly size: number;

  constructor(
    private readonly keys: Float64Array,
    private readonly values: Uint32Array,
  ) {
    this.size = keys.length;
  }

  get(key: number): number | undefined {
    const keys = this.keys;
    let lo = 0,
      hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo < keys.length && keys[lo] === key ? this.values[lo] : undefined;
  }
}
