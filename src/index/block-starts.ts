/**
 * A per-message column of starts (non-decreasing byte offsets into a byte column: the message
 * rows, the token sequences) in 2 bytes a value instead of 4: values go in blocks of
 * START_BLOCK; a block stores its first value once (base) and each value its distance from it
 * (delta, Uint16). A block whose values span FAR or more (64 messages of 1 KB or more each: long
 * emails) keeps its values whole in `far`, every delta of it is FAR, and its base says where they
 * sit. At 1M messages the two columns so kept (msgRowStart*, seqStart*) were 7.6 MiB as Uint32,
 * 3.9 MiB so.
 *
 * The base is a Uint32, not a signed number as in post-starts.ts, so that a byte column keeps the
 * 4 GiB (2^32 - 1) it could address before: the delta, read anyway, tells a far block apart.
 */

export const START_BLOCK_SHIFT = 6;
const START_BLOCK = 1 << START_BLOCK_SHIFT;
const START_BLOCK_MASK = START_BLOCK - 1;
/** Every delta of a far block; a value of a block that is not far is below it. */
export const FAR = 0xffff;

/** The three arrays of one column so encoded. */
export interface BlockStarts {
  /** per block of START_BLOCK values: its first value, or where its values start in `far` */
  readonly base: Uint32Array;
  /** per value: value - its block's base, or FAR in a far block */
  readonly delta: Uint16Array;
  /** the values of the far blocks, START_BLOCK a block (fewer for a last, partial one) */
  readonly far: Uint32Array;
}

/** Value i of a column encoded as (base, delta, far). */
export function startAt(base: Uint32Array, delta: Uint16Array, far: Uint32Array, i: number): number {
  const d = delta[i];
  const b = base[i >>> START_BLOCK_SHIFT];
  return d !== FAR ? b + d : far[b + (i & START_BLOCK_MASK)];
}

/**
 * Value i + 1 of a column, given value i (`start`): from the deltas alone when both sit in one
 * block that is not far (63 values of 64), so that a span's two ends cost one base read (both
 * read with startAt cost the common term 4% in process: bench/RESULTS.md, session 24).
 */
export function nextStart(base: Uint32Array, delta: Uint16Array, far: Uint32Array, i: number, start: number): number {
  const d = delta[i];
  return d !== FAR && ((i + 1) & START_BLOCK_MASK) !== 0
    ? start + (delta[i + 1] - d)
    : startAt(base, delta, far, i + 1);
}

/** Encodes `values` (non-decreasing, each below 2^32). */
export function encodeBlockStarts(values: Uint32Array): BlockStarts {
  const n = values.length;
  const blocks = (n + START_BLOCK_MASK) >>> START_BLOCK_SHIFT;
  const base = new Uint32Array(blocks);
  const delta = new Uint16Array(n);
  let farLength = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << START_BLOCK_SHIFT;
    const to = Math.min(n, from + START_BLOCK);
    if (values[to - 1] - values[from] >= FAR) farLength += to - from;
  }
  const far = new Uint32Array(farLength);
  let at = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << START_BLOCK_SHIFT;
    const to = Math.min(n, from + START_BLOCK);
    const first = values[from];
    if (values[to - 1] - first >= FAR) {
      base[b] = at;
      for (let i = from; i < to; i++) {
        far[at++] = values[i];
        delta[i] = FAR;
      }
    } else {
      base[b] = first;
      for (let i = from; i < to; i++) delta[i] = values[i] - first;
    }
  }
  return { base, delta, far };
}

/** The values of an encoded column of `n` values, whole (tests, conversions). */
export function decodeBlockStarts(x: BlockStarts, n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = startAt(x.base, x.delta, x.far, i);
  return out;
}

/**
 * Whether (base, delta, far), read from a snapshot, is a column of `n` values that starts at 0,
 * never goes down and ends at `end` (the byte column's length): a query then reads it without
 * checks. Every far position read is inside `far`, and a block is far in all its values or none.
 */
export function blockStartsFit(x: BlockStarts, n: number, end: number): boolean {
  const { base, delta, far } = x;
  if (n < 1 || delta.length !== n || base.length !== (n + START_BLOCK_MASK) >>> START_BLOCK_SHIFT) return false;
  let previous = 0;
  for (let b = 0; b < base.length; b++) {
    const from = b << START_BLOCK_SHIFT;
    const to = Math.min(n, from + START_BLOCK);
    const isFar = delta[from] === FAR;
    if (isFar && base[b] + (to - from) > far.length) return false;
    for (let i = from; i < to; i++) {
      if ((delta[i] === FAR) !== isFar) return false;
      const v = isFar ? far[base[b] + (i - from)] : base[b] + delta[i];
      if (v < previous || v > end) return false;
      previous = v;
    }
  }
  return startAt(base, delta, far, 0) === 0 && previous === end;
}
