/**
 * Where each entry's postings start, in 2 bytes an entry instead of 4: entries go in blocks of
 * POST_BLOCK; a block stores its first start once (entryPostBase) and each entry its distance from
 * it (entryPostOffset, Uint16). A block whose starts span more than a Uint16 (an entry of a contact
 * with tens of thousands of messages of one token: rare) keeps its starts whole in entryPostFar,
 * and its base says where, as a negative number. At 1M messages (6.4M entries) the 4-byte column
 * was 25.7 bytes a message; this is 12.9 + 0.4.
 */

export const POST_BLOCK_SHIFT = 6;
const POST_BLOCK = 1 << POST_BLOCK_SHIFT;
const POST_BLOCK_MASK = POST_BLOCK - 1;

/** The three columns of the encoding (an OrgIndex has them). */
export interface PostStarts {
  /** per block of POST_BLOCK entries: its first entry's start, or ~(where its starts sit in entryPostFar) */
  readonly entryPostBase: Int32Array;
  /** per entry (and one past the last): start - the block's base; 0 in a far block */
  readonly entryPostOffset: Uint16Array;
  /** the starts of the far blocks, POST_BLOCK a block (fewer for a last, partial one) */
  readonly entryPostFar: Uint32Array;
}

/** Where entry e's postings start; entry e + 1's start is where they end (e may be the entry count). */
export function postStart(x: PostStarts, e: number): number {
  const b = x.entryPostBase[e >>> POST_BLOCK_SHIFT];
  return b >= 0 ? b + x.entryPostOffset[e] : x.entryPostFar[~b + (e & POST_BLOCK_MASK)];
}

/** Encodes `starts` (entries + 1 non-decreasing values, the last the postings' length). */
export function encodePostStarts(starts: Uint32Array): PostStarts {
  const n = starts.length;
  if (n > 0 && starts[n - 1] > 0x7fffffff) {
    throw new Error(`index: ${starts[n - 1]} postings in one organization; the layout holds at most 2^31 - 1`);
  }
  const blocks = (n + POST_BLOCK_MASK) >>> POST_BLOCK_SHIFT;
  const entryPostBase = new Int32Array(blocks);
  const entryPostOffset = new Uint16Array(n);
  let farLength = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << POST_BLOCK_SHIFT;
    const to = Math.min(n, from + POST_BLOCK);
    if (starts[to - 1] - starts[from] > 0xffff) farLength += to - from;
  }
  const entryPostFar = new Uint32Array(farLength);
  let far = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << POST_BLOCK_SHIFT;
    const to = Math.min(n, from + POST_BLOCK);
    const base = starts[from];
    if (starts[to - 1] - base > 0xffff) {
      entryPostBase[b] = ~far;
      for (let e = from; e < to; e++) entryPostFar[far++] = starts[e];
    } else {
      entryPostBase[b] = base;
      for (let e = from; e < to; e++) entryPostOffset[e] = starts[e] - base;
    }
  }
  return { entryPostBase, entryPostOffset, entryPostFar };
}
