/**
 * Each message's token sequence, kept for phrase adjacency, as bytes: every token is written as
 * the varint of its frequency rank (the commonest 128 tokens take one byte, the next 16,256 two,
 * the rest three), not as a 32-bit id. At 1M messages that is ~17 instead of ~40 bytes a message.
 *
 * A varint is prefix-free: a byte below 0x80 ends a token. So a phrase, encoded the same way,
 * occurs in a message exactly when its bytes occur there starting at a token boundary (the first
 * byte, or one after a byte below 0x80): no decoding on the request path.
 */

import { type BlockStarts, encodeBlockStarts, nextStart, startAt } from './block-starts.js';
import type { KeyColumn } from './org-index.js';

/** The three arrays of the sequences' starts (block-starts.ts); an OrgIndex has them. */
export interface SeqStarts {
  readonly seqStartBase: Uint32Array;
  readonly seqStartDelta: Uint16Array;
  readonly seqStartFar: Uint32Array;
}

/** Where message m's sequence starts in tokenSeqBytes (m up to the message count: the end of the last). */
export function seqStart(x: SeqStarts, m: number): number {
  return startAt(x.seqStartBase, x.seqStartDelta, x.seqStartFar, m);
}

/** Where message m's sequence ends, given where it starts (`start`, seqStart's). */
export function seqEnd(x: SeqStarts, m: number, start: number): number {
  return nextStart(x.seqStartBase, x.seqStartDelta, x.seqStartFar, m, start);
}

/** The names a SeqStarts gives the arrays of an encoded column. */
export function seqStartsOf(x: BlockStarts): SeqStarts {
  return { seqStartBase: x.base, seqStartDelta: x.delta, seqStartFar: x.far };
}

/** The frequency rank of every token id (0 = the commonest), ties by id. */
export function frequencyRanks(seq: Uint32Array, vocabulary: number): Uint32Array {
  const count = new Uint32Array(vocabulary);
  for (let k = 0; k < seq.length; k++) count[seq[k]]++;
  const byFrequency = new Uint32Array(vocabulary);
  for (let t = 0; t < vocabulary; t++) byFrequency[t] = t;
  byFrequency.sort((a, b) => count[b] - count[a] || a - b);
  const rank = new Uint32Array(vocabulary);
  for (let r = 0; r < vocabulary; r++) rank[byFrequency[r]] = r;
  return rank;
}

function varintLength(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

function writeVarint(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return at;
}

/**
 * The byte form of the token-id sequences `seq` (message m: seq[tokenStart[m] .. tokenStart[m+1])):
 * `tokenSeqBytes`, with message m at tokenSeqBytes[seqStart(m) .. seqStart(m + 1)).
 */
export function encodeTokenSeq(
  seq: Uint32Array,
  tokenStart: Uint32Array,
  tokenRank: Uint32Array,
): SeqStarts & { tokenSeqBytes: Uint8Array } {
  const messages = tokenStart.length - 1;
  let total = 0;
  for (let k = 0; k < seq.length; k++) total += varintLength(tokenRank[seq[k]]);
  const tokenSeqBytes = new Uint8Array(total);
  const seqByteStart = new Uint32Array(messages + 1);
  let at = 0;
  for (let m = 0; m < messages; m++) {
    seqByteStart[m] = at;
    for (let k = tokenStart[m], end = tokenStart[m + 1]; k < end; k++)
      at = writeVarint(tokenSeqBytes, at, tokenRank[seq[k]]);
  }
  seqByteStart[messages] = at;
  return { ...seqStartsOf(encodeBlockStarts(seqByteStart)), tokenSeqBytes };
}

/** A phrase's token ids in the byte form of `encodeTokenSeq` (made once a query, per phrase). */
export function encodePhrase(tokenRank: KeyColumn, ids: ArrayLike<number>): Uint8Array {
  let n = 0;
  for (let k = 0; k < ids.length; k++) n += varintLength(tokenRank[ids[k]]);
  const out = new Uint8Array(n);
  let at = 0;
  for (let k = 0; k < ids.length; k++) at = writeVarint(out, at, tokenRank[ids[k]]);
  return out;
}

/**
 * Where in `pattern` (a phrase's bytes) its rarest token starts: the largest rank, as ranks count
 * occurrences (frequencyRanks). A phrase is searched by this token (see containsTokens).
 */
export function anchorOf(pattern: Uint8Array): number {
  let best = -1,
    at = 0;
  for (let p = 0; p < pattern.length; ) {
    let v = 0,
      scale = 1,
      q = p;
    for (;;) {
      const x = pattern[q++];
      v += (x & 0x7f) * scale;
      if (x < 0x80 || q === pattern.length) break;
      scale *= 0x80;
    }
    if (v > best) {
      best = v;
      at = p;
    }
    p = q;
  }
  return at;
}

/** Bytes scanned one by one before a search with few anchors so far goes native (see containsTokens). */
const PROBE_BYTES = 512;
/** Fewer anchors than this in the probe: the rest is searched natively. */
const SPARSE_HITS = 4;
/** Anchors closer than this on average (bytes): the native search goes back to the byte scan. */
const DENSE_GAP = 64;

/**
 * Does bytes[from .. to) hold `pattern` starting at a token boundary? The candidate starts are
 * those where the pattern's rarest token (`anchorAt`, anchorOf) has its first byte: for real text
 * few. A long message where that token stays rare after PROBE_BYTES is searched for it with
 * Buffer#indexOf (memchr) instead. Comparisons are budgeted linear in the text; past the budget,
 * Knuth-Morris-Pratt from where the search stopped, so this is O(text + pattern) whatever the
 * input.
 * - A repetitive message and phrase (3M times "de", a phrase of 70 times "de" then "fim"): 3.3 s
 *   a request before the budget.
 * - 10,000 messages of 10,000 tokens ("o o ... a o o ..."), 10 phrases of "o" and "a" that never
 *   match (a resource audit): 8 s a request (24 s on a loaded machine) when the scan keyed on the
 *   phrase's first token, "o", compared at nearly every byte; the rare "a" is found once a message.
 */
export function containsTokens(
  bytes: Uint8Array,
  from: number,
  to: number,
  pattern: Uint8Array,
  anchorAt: number = anchorOf(pattern),
): boolean {
  return scanTokens(bytes, from, from, to, pattern, anchorAt, 2 * (to - from) + 64, from + PROBE_BYTES);
}

/**
 * containsTokens over the starts from `start` on, with `budget` comparisons left. At start
 * `probe` (-1: never), few anchors so far send the rest to the native search.
 */
function scanTokens(
  bytes: Uint8Array,
  from: number,
  start: number,
  to: number,
  pattern: Uint8Array,
  anchorAt: number,
  budget: number,
  probe: number,
): boolean {
  const len = pattern.length;
  const last = to - len;
  const key = pattern[anchorAt];
  let hits = 0;
  for (let s = start; s <= last; s++) {
    if (s === probe && hits < SPARSE_HITS && last - s >= PROBE_BYTES)
      return searchNative(bytes, from, s, to, pattern, anchorAt, budget);
    if (bytes[s + anchorAt] !== key) continue;
    hits++;
    if (s > from && bytes[s - 1] >= 0x80) continue;
    let k = 0;
    while (k < len && bytes[s + k] === pattern[k]) k++;
    if (k === len) return true;
    budget -= k + 1;
    if (budget < 0) return containsTokensKmp(bytes, from, s + 1, to, pattern);
  }
  return false;
}

/**
 * scanTokens from `start` with the anchor found by Buffer#indexOf, while the anchors stay sparse
 * (a native call for anchors a few bytes apart costs more than the scan: random text of 11 words
 * took 1.6 s instead of 1.0).
 */
function searchNative(
  bytes: Uint8Array,
  from: number,
  start: number,
  to: number,
  pattern: Uint8Array,
  anchorAt: number,
  budget: number,
): boolean {
  const len = pattern.length;
  let anchorEnd = anchorAt;
  while (pattern[anchorEnd] >= 0x80 && anchorEnd + 1 < len) anchorEnd++;
  // views, not copies: indexOf has no end bound, so the text is cut at the message's end
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from);
  const anchor = Buffer.from(pattern.buffer, pattern.byteOffset + anchorAt, anchorEnd + 1 - anchorAt);
  const last = to - from - len;
  const first = start - from + anchorAt;
  let hits = 0;
  for (let h = text.indexOf(anchor, first); h >= 0; h = text.indexOf(anchor, h + 1)) {
    const s = h - anchorAt;
    if (s > last) return false; // the later ones start later still
    if (s > 0 && text[s - 1] >= 0x80) continue;
    let k = 0;
    while (k < len && text[s + k] === pattern[k]) k++;
    if (k === len) return true;
    budget -= k + 1;
    // every start up to s was tried: each has its anchor at or before h
    if (budget < 0) return containsTokensKmp(bytes, from, from + s + 1, to, pattern);
    if (++hits >= SPARSE_HITS && hits * DENSE_GAP > h - first)
      return scanTokens(bytes, from, from + s + 1, to, pattern, anchorAt, budget, -1);
  }
  return false;
}

/** containsTokens by Knuth-Morris-Pratt over bytes[start .. to), token boundaries judged from `from`. */
function containsTokensKmp(bytes: Uint8Array, from: number, start: number, to: number, pattern: Uint8Array): boolean {
  const len = pattern.length;
  // fail[k]: the length of the longest proper prefix of pattern[0 .. k] that is also its suffix
  const fail = new Int32Array(len);
  for (let k = 1, q = 0; k < len; k++) {
    while (q > 0 && pattern[k] !== pattern[q]) q = fail[q - 1];
    if (pattern[k] === pattern[q]) q++;
    fail[k] = q;
  }
  for (let i = start, q = 0; i < to; i++) {
    while (q > 0 && bytes[i] !== pattern[q]) q = fail[q - 1];
    if (bytes[i] === pattern[q]) q++;
    if (q === len) {
      const s = i - len + 1;
      if (s === from || bytes[s - 1] < 0x80) return true;
      q = fail[q - 1];
    }
  }
  return false;
}

/**
 * Token id by frequency rank, made once per tokenRank column: a tool decoding many messages
 * rebuilt it every call (a test of 2,000 cases over a 20,000-token vocabulary spent 50 s in it).
 */
const ID_OF_RANK = new WeakMap<KeyColumn, Map<number, number>>();
function idsOfRanks(tokenRank: KeyColumn): Map<number, number> {
  let idOfRank = ID_OF_RANK.get(tokenRank);
  if (idOfRank === undefined) {
    idOfRank = new Map();
    for (let t = 0; t < tokenRank.length; t++) idOfRank.set(tokenRank[t], t);
    ID_OF_RANK.set(tokenRank, idOfRank);
  }
  return idOfRank;
}

/** The token ids of message m, decoded (tools and benchmarks; never the request path). */
export function messageTokenIds(
  index: SeqStarts & { tokenSeqBytes: Uint8Array; tokenRank: KeyColumn },
  m: number,
): number[] {
  const idOfRank = idsOfRanks(index.tokenRank);
  const ids: number[] = [];
  let v = 0,
    shift = 0;
  for (let k = seqStart(index, m), end = seqStart(index, m + 1); k < end; k++) {
    const b = index.tokenSeqBytes[k];
    v += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) {
      ids.push(idOfRank.get(v)!);
      v = 0;
      shift = 0;
    }
  }
  return ids;
}
