/**
 * Each message's token sequence, kept for phrase adjacency, as bytes: every token is written as
 * the varint of its frequency rank (the commonest 128 tokens take one byte, the next 16,256 two,
 * the rest three), not as a 32-bit id. At 1M messages that is ~17 instead of ~40 bytes a message.
 *
 * A varint is prefix-free: a byte below 0x80 ends a token. So a phrase, encoded the same way,
 * occurs in a message exactly when its bytes occur there starting at a token boundary (the first
 * byte, or one after a byte below 0x80): no decoding on the request path.
 */

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
 * The byte form of the token-id sequences `seq` (message m: seq[seqStart[m] .. seqStart[m+1])):
 * `tokenSeqBytes`, with message m at tokenSeqBytes[seqByteStart[m] .. seqByteStart[m+1]).
 */
export function encodeTokenSeq(
  seq: Uint32Array,
  seqStart: Uint32Array,
  tokenRank: Uint32Array,
): { seqByteStart: Uint32Array; tokenSeqBytes: Uint8Array } {
  const messages = seqStart.length - 1;
  let total = 0;
  for (let k = 0; k < seq.length; k++) total += varintLength(tokenRank[seq[k]]);
  const tokenSeqBytes = new Uint8Array(total);
  const seqByteStart = new Uint32Array(messages + 1);
  let at = 0;
  for (let m = 0; m < messages; m++) {
    seqByteStart[m] = at;
    for (let k = seqStart[m], end = seqStart[m + 1]; k < end; k++)
      at = writeVarint(tokenSeqBytes, at, tokenRank[seq[k]]);
  }
  seqByteStart[messages] = at;
  return { seqByteStart, tokenSeqBytes };
}

/** A phrase's token ids in the byte form of `encodeTokenSeq` (made once a query, per phrase). */
export function encodePhrase(tokenRank: Uint32Array, ids: ArrayLike<number>): Uint8Array {
  let n = 0;
  for (let k = 0; k < ids.length; k++) n += varintLength(tokenRank[ids[k]]);
  const out = new Uint8Array(n);
  let at = 0;
  for (let k = 0; k < ids.length; k++) at = writeVarint(out, at, tokenRank[ids[k]]);
  return out;
}

/**
 * Does bytes[from .. to) hold `pattern` starting at a token boundary? A direct scan first (the
 * first byte rarely matches: fastest for real text), with a budget of byte comparisons linear in
 * the text; past it, Knuth-Morris-Pratt from where the scan stopped. A repetitive message and
 * phrase (a message of 3M times "de", a phrase of 70 times "de" then "fim": ~70 comparisons at
 * every position) took 3.3 s a request; this is O(text + pattern) whatever the input.
 */
export function containsTokens(bytes: Uint8Array, from: number, to: number, pattern: Uint8Array): boolean {
  const len = pattern.length;
  const first = pattern[0];
  const last = to - len;
  let budget = 2 * (to - from) + 64;
  outer: for (let s = from; s <= last; s++) {
    if (bytes[s] !== first || (s > from && bytes[s - 1] >= 0x80)) continue;
    for (let k = 1; k < len; k++) {
      if (bytes[s + k] === pattern[k]) continue;
      budget -= k;
      if (budget < 0) return containsTokensKmp(bytes, from, s + 1, to, pattern);
      continue outer;
    }
    return true;
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

/** The token ids of message m, decoded (tools and benchmarks; never the request path). */
export function messageTokenIds(
  index: { seqByteStart: Uint32Array; tokenSeqBytes: Uint8Array; tokenRank: Uint32Array },
  m: number,
): number[] {
  const idOfRank = new Map<number, number>();
  for (let t = 0; t < index.tokenRank.length; t++) idOfRank.set(index.tokenRank[t], t);
  const ids: number[] = [];
  let v = 0,
    shift = 0;
  for (let k = index.seqByteStart[m]; k < index.seqByteStart[m + 1]; k++) {
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
