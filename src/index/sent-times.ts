/**
 * Every message's sent_at (epoch ms, an integer), by ordinal, in a little over 4 bytes a message
 * instead of a Float64's 8: messages go by blocks of SENT_BLOCK ordinals, each block has a whole
 * second its times count from (msgSentBlock), and each message one Uint32 word (msgSentLow): its
 * seconds since that base in the high 22 bits, its milliseconds (0-999) in the low 10. A block
 * spans a few minutes of a busy organization, and 22 bits of seconds are 48 days: a block whose
 * times spread wider (a quiet organization's, or one across a gap) is "far": its base is NaN, and
 * its messages' words are positions in msgSentFar, their epoch ms as Float64s. So any instant a
 * Date holds is kept exactly.
 *
 * 4.125 bytes a message, against 6 in the layout before blocks (three Uint16 words a message,
 * sent-times-words.ts): 1.8 MiB less at 1M messages. A timestamp is still one cache line of a
 * message's column; the bases are 1/64 of it (125 KB at 1M) and stay in the cache.
 */

/** The columns of the sent times (an OrgIndex has them; the build and the loader make them). */
export interface SentTimes {
  /** a block's base: the whole second its times count from (epoch seconds, an integer), or NaN when far */
  readonly msgSentBlock: Float64Array;
  /** a word a message: seconds since its block's base << 10 | milliseconds; in a far block, a position in msgSentFar */
  readonly msgSentLow: Uint32Array;
  /** the epoch ms of the messages of far blocks (empty when there is none) */
  readonly msgSentFar: Float64Array;
}

/** The section names of SentTimes, as the snapshot names them. */
export const SENT_TIME_SECTIONS = ['msgSentBlock', 'msgSentLow', 'msgSentFar'] as const;

/** log2 of the messages of a block. */
export const SENT_BLOCK_SHIFT = 6;
/** Messages of a block (the last one may have fewer). */
export const SENT_BLOCK = 1 << SENT_BLOCK_SHIFT;
/** Bits of a word's milliseconds. */
export const MILLI_BITS = 10;
/** A word's milliseconds. */
export const MILLI_MASK = (1 << MILLI_BITS) - 1;
/** The first number of seconds since a base that a word cannot hold. */
const SPAN = 2 ** (32 - MILLI_BITS);

/** Messages of the sent times. */
export function sentCount(x: SentTimes): number {
  return x.msgSentLow.length;
}

/** Blocks of n messages. */
export function sentBlocks(n: number): number {
  return (n + SENT_BLOCK - 1) >>> SENT_BLOCK_SHIFT;
}

/**
 * Message o's sent_at in epoch ms. Above the small-integer range: a call that is not inlined
 * returns it boxed, a heap number each time, so the request path (the body writer's isoAt, the
 * date window's firstSentBefore) reads the words in its own body instead.
 */
export function sentAtOf(x: SentTimes, o: number): number {
  const base = x.msgSentBlock[o >>> SENT_BLOCK_SHIFT],
    w = x.msgSentLow[o];
  // (a NaN base: a far block)
  return !Number.isNaN(base) ? (base + (w >>> MILLI_BITS)) * 1000 + (w & MILLI_MASK) : x.msgSentFar[w];
}

/**
 * The first ordinal sent before `ms`, or at `ms` too when `orAt`: the date window's ends, as
 * sent_at is non-increasing. A binary search that reads the words itself (see sentAtOf).
 */
export function firstSentBefore(x: SentTimes, ms: number, orAt: boolean): number {
  const blocks = x.msgSentBlock,
    low = x.msgSentLow,
    far = x.msgSentFar;
  let lo = 0,
    hi = low.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const base = blocks[mid >>> SENT_BLOCK_SHIFT],
      w = low[mid];
    const t = !Number.isNaN(base) ? (base + (w >>> MILLI_BITS)) * 1000 + (w & MILLI_MASK) : far[w];
    if (orAt ? t > ms : t >= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Whether messages a and b were sent at the same instant. Within a block (what ties and time
 * ranks mostly compare: neighbours) the words alone, no instant computed. Across blocks the two
 * instants are written out, not sentAtOf(a) === sentAtOf(b): with the calls, 1M messages of one
 * sent_at built in 2.24x the distinct-time build instead of 0.76x, and their queries' p99 went
 * from 0.69 to 3.98 ms (timeRank gallops across blocks; bench/RESULTS.md, session 34).
 */
export function sameSentAt(x: SentTimes, a: number, b: number): boolean {
  const blocks = x.msgSentBlock,
    low = x.msgSentLow,
    far = x.msgSentFar;
  const ka = a >>> SENT_BLOCK_SHIFT,
    kb = b >>> SENT_BLOCK_SHIFT;
  const wa = low[a],
    wb = low[b];
  const ba = blocks[ka];
  if (ka === kb) return !Number.isNaN(ba) ? wa === wb : far[wa] === far[wb];
  const bb = blocks[kb];
  const ta = !Number.isNaN(ba) ? (ba + (wa >>> MILLI_BITS)) * 1000 + (wa & MILLI_MASK) : far[wa];
  const tb = !Number.isNaN(bb) ? (bb + (wb >>> MILLI_BITS)) * 1000 + (wb & MILLI_MASK) : far[wb];
  return ta === tb;
}

/** The sent times of `sentAt` (integer epoch ms within a Date's range, any order). */
export function encodeSentTimes(sentAt: Float64Array): SentTimes {
  const n = sentAt.length;
  for (let o = 0; o < n; o++) {
    const t = sentAt[o];
    if (!Number.isSafeInteger(t)) throw new Error(`sent times: message ${o} has no integer instant (${t})`);
  }
  const blockCount = sentBlocks(n);
  const blocks = new Float64Array(blockCount);
  const low = new Uint32Array(n);
  // a block's seconds: the oldest second the base, far when the newest is too far from it
  let farCount = 0;
  for (let k = 0; k < blockCount; k++) {
    const from = k << SENT_BLOCK_SHIFT,
      to = Math.min(n, from + SENT_BLOCK);
    let min = Infinity,
      max = -Infinity;
    for (let o = from; o < to; o++) {
      const s = Math.floor(sentAt[o] / 1000);
      if (s < min) min = s;
      if (s > max) max = s;
    }
    if (max - min < SPAN) blocks[k] = min;
    else {
      blocks[k] = Number.NaN;
      farCount += to - from;
    }
  }
  const far = new Float64Array(farCount);
  let f = 0;
  for (let o = 0; o < n; o++) {
    const base = blocks[o >>> SENT_BLOCK_SHIFT];
    const t = sentAt[o];
    if (Number.isNaN(base)) {
      far[f] = t;
      low[o] = f++;
    } else {
      const s = Math.floor(t / 1000);
      low[o] = ((s - base) * (MILLI_MASK + 1) + (t - s * 1000)) >>> 0;
    }
  }
  return { msgSentBlock: blocks, msgSentLow: low, msgSentFar: far };
}

/** sent_at of every message, as epoch ms, by ordinal: encodeSentTimes' inverse (tests write the layout before with it). */
export function decodeSentTimes(x: SentTimes): Float64Array {
  const n = sentCount(x);
  const out = new Float64Array(n);
  for (let o = 0; o < n; o++) out[o] = sentAtOf(x, o);
  return out;
}

/** A Date's range, in ms: what sent_at may be. */
export const DATE_LIMIT = 8.64e15;

/**
 * Whether loaded sent times have their shape: n words, a base a block of them, each base an
 * integer or NaN (far), milliseconds below 1000, every far word a position in msgSentFar holding an
 * integer, every instant within a Date's range, and non-increasing with the ordinal (binary
 * searches and time ranks rely on it). A query reads them without checks.
 */
export function sentTimesFit(x: SentTimes, n: number): boolean {
  const blocks = x.msgSentBlock,
    low = x.msgSentLow,
    far = x.msgSentFar;
  if (low.length !== n || blocks.length !== sentBlocks(n)) return false;
  for (let i = 0; i < far.length; i++) if (!Number.isSafeInteger(far[i])) return false;
  // the previous message's instant, in ms (a double written once a block: no garbage a message)
  let last = Infinity;
  for (let k = 0; k < blocks.length; k++) {
    const base = blocks[k];
    const from = k << SENT_BLOCK_SHIFT,
      to = Math.min(n, from + SENT_BLOCK);
    if (Number.isNaN(base)) {
      for (let o = from; o < to; o++) {
        const w = low[o];
        if (w >= far.length || far[w] > last) return false;
        last = far[w];
      }
      continue;
    }
    if (!Number.isSafeInteger(base)) return false;
    // within a block, the words order as their instants (milliseconds below 1000 < 1024)
    for (let o = from; o < to; o++) {
      if ((low[o] & MILLI_MASK) >= 1000) return false;
      if (o > from && low[o] > low[o - 1]) return false;
    }
    if (sentAtOf(x, from) > last) return false;
    last = sentAtOf(x, to - 1);
  }
  // non-increasing: the newest and the oldest bound the rest
  return n === 0 || (sentAtOf(x, 0) <= DATE_LIMIT && sentAtOf(x, n - 1) >= -DATE_LIMIT);
}
