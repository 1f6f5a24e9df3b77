/**
 * Where each entry's postings start, in no column of its own. Entries go in blocks of POST_BLOCK;
 * a block stores its first start once (entryPostBase), and each entry its distance from it in the
 * spare high bits of its entryNewestIn word, above the rank field (layout.ts: rankBits of the
 * message count, 21 bits at 1M messages, so 11 bits of distance; 25 at 10M, 7 bits). The walks
 * read that word anyway, so a start costs no cache line of its own. A block whose starts span
 * more than those bits hold (entries of a contact with many messages of one token) keeps its
 * starts whole in entryPostFar, and its base says where, as a negative number: at 1M messages
 * 72 entries of 6.5M.
 *
 * At 1M messages the previous layout's column of 2-byte distances was 12.4 MiB (12.9 bytes a
 * message); the bases in blocks of 8 take 3.1 MiB. Blocks of 16 took 1.5 MiB, but cost the
 * channel + date query's matching 3-6% more time than blocks of 8 (bench/ab-query.ts).
 */

export const POST_BLOCK_SHIFT = 3;
const POST_BLOCK = 1 << POST_BLOCK_SHIFT;
const POST_BLOCK_MASK = POST_BLOCK - 1;

/** The columns of the encoding (an OrgIndex has them). */
export interface PostStarts {
  readonly messageCount: number;
  /** per block of POST_BLOCK entries: its first entry's start, or ~(where its starts sit in entryPostFar) */
  readonly entryPostBase: Int32Array;
  /** the starts of the far blocks, POST_BLOCK a block (fewer for a last, partial one) */
  readonly entryPostFar: Uint32Array;
  /**
   * entries + 1 words: the rank field (layout.ts) in the low rankBits bits, the entry's start minus
   * its block's base above them (0 in a far block); the last word holds the end's distance only
   */
  readonly entryNewestIn: Uint32Array;
}

/**
 * Bits of an entryNewestIn word's rank field for an organization of `messageCount` messages: every
 * ordinal, and noInbound's bit above them (layout.ts). 21 at 1M messages, 25 at 10M.
 */
export function rankBits(messageCount: number): number {
  return 33 - Math.clz32(messageCount);
}

/** The most messages an organization can have: the rank field leaves room for a distance. */
export const MAX_MESSAGES = 2 ** 30 - 1;

/** Where entry e's postings start; entry e + 1's start is where they end (e may be the entry count). */
export function postStart(x: PostStarts, e: number): number {
  const b = x.entryPostBase[e >>> POST_BLOCK_SHIFT];
  return b >= 0
    ? b + ((x.entryNewestIn[e] >>> rankBits(x.messageCount)) | 0)
    : x.entryPostFar[~b + (e & POST_BLOCK_MASK)] | 0;
}

/**
 * postStart for the query's walks, from the columns and the shift, which they read once from their
 * plan. Its own function, not called by postStart: the build's and the loader's calls of a shared
 * one left its optimized code slower for the query (the channel + date query's matching took
 * +17-40% in bench/ab-query.ts with one function for both).
 *
 * Both branches give an int32 (`| 0`; a start is below 2^31, encodePostStarts checks): a far read
 * as a Uint32 made the result a double wherever a query had met a far block, and the matching of
 * every later query paid for it (channel + date +12-15% against +5% with the `| 0`).
 */
export function postStartIn(base: Int32Array, words: Uint32Array, far: Uint32Array, shift: number, e: number): number {
  const b = base[e >>> POST_BLOCK_SHIFT];
  return b >= 0 ? b + ((words[e] >>> shift) | 0) : far[~b + (e & POST_BLOCK_MASK)] | 0;
}

/**
 * Encodes `starts` (entries + 1 non-decreasing values, the last the postings' length) into the
 * high bits of `words` (entries + 1 words whose high bits are zero) and the returned columns.
 */
export function encodePostStarts(
  starts: Uint32Array,
  words: Uint32Array,
  messageCount: number,
): { entryPostBase: Int32Array; entryPostFar: Uint32Array } {
  const n = starts.length;
  if (n > 0 && starts[n - 1] > 0x7fffffff) {
    throw new Error(`index: ${starts[n - 1]} postings in one organization; the layout holds at most 2^31 - 1`);
  }
  if (messageCount > MAX_MESSAGES) {
    throw new Error(`index: ${messageCount} messages in one organization; the layout holds at most 2^30 - 1`);
  }
  if (words.length !== n) throw new Error(`index: ${words.length} entry words for ${n} starts`);
  const shift = rankBits(messageCount);
  // the largest distance the high bits hold
  const span = 0xffffffff >>> shift;
  const blocks = (n + POST_BLOCK_MASK) >>> POST_BLOCK_SHIFT;
  const entryPostBase = new Int32Array(blocks);
  let farLength = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << POST_BLOCK_SHIFT;
    const to = Math.min(n, from + POST_BLOCK);
    if (starts[to - 1] - starts[from] > span) farLength += to - from;
  }
  const entryPostFar = new Uint32Array(farLength);
  let far = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b << POST_BLOCK_SHIFT;
    const to = Math.min(n, from + POST_BLOCK);
    const base = starts[from];
    if (starts[to - 1] - base > span) {
      entryPostBase[b] = ~far;
      for (let e = from; e < to; e++) entryPostFar[far++] = starts[e];
    } else {
      entryPostBase[b] = base;
      for (let e = from; e < to; e++) words[e] = (words[e] | ((starts[e] - base) << shift)) >>> 0;
    }
  }
  return { entryPostBase, entryPostFar };
}

/**
 * Whether stored columns have their shape: entries + 1 words, a base per block, far blocks inside
 * entryPostFar, starts from 0 that never go down and end at the postings' length (a query reads
 * them without checks).
 */
export function postStartsFit(x: PostStarts, entries: number, postings: number): boolean {
  const n = entries + 1;
  const { entryPostBase: base, entryPostFar: far } = x;
  if (x.entryNewestIn.length !== n || base.length !== (n + POST_BLOCK_MASK) >>> POST_BLOCK_SHIFT) return false;
  for (let b = 0; b < base.length; b++) {
    const from = b << POST_BLOCK_SHIFT;
    if (base[b] < 0 && ~base[b] + Math.min(n - from, POST_BLOCK) > far.length) return false;
  }
  let last = 0;
  for (let e = 0; e < n; e++) {
    const s = postStart(x, e);
    if (s < last || (e === 0 && s !== 0)) return false;
    last = s;
  }
  return last === postings;
}

/**
 * The starts of the layout before this one (blocks of 64 entries, the distances in a Uint16
 * column of their own, far blocks past a span of 65,535), whole: for the loader's conversion of
 * such snapshots. Null when a far block points outside its column.
 */
export function decodeSeparatePostStarts(
  base: Int32Array,
  offsets: Uint16Array,
  far: Uint32Array,
  n: number,
): Uint32Array | null {
  const SHIFT = 6;
  if (offsets.length !== n || base.length !== (n + 63) >>> SHIFT) return null;
  const starts = new Uint32Array(n);
  for (let e = 0; e < n; e++) {
    const b = base[e >>> SHIFT];
    if (b >= 0) starts[e] = b + offsets[e];
    else {
      const at = ~b + (e & 63);
      if (at >= far.length) return null;
      starts[e] = far[at];
    }
  }
  return starts;
}
