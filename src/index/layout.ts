/**
 * The encodings of the index (see org-index.ts), in one place: the index build writes them and the
 * query reads them, so both import them from here.
 */
import { CHANNELS } from '../model/records.js';

/** The "nothing" of a Uint32Array column: no newest message in a direction, no pair, not seen. */
export const NONE = 0xffffffff;

/** Channels of a direction: a message's combo (msgCombo) is direction * CHANNEL_COUNT + channel. */
export const CHANNEL_COUNT = CHANNELS.length;

/** The combo of a message (direction 0 inbound, 1 outbound; channel an index into CHANNELS). */
export function comboOf(direction: number, channel: number): number {
  return direction * CHANNEL_COUNT + channel;
}

/** Bits of the inbound combos in a combo mask (entryMask, a filter mask); the rest are outbound. */
export const INBOUND_COMBOS = (1 << CHANNEL_COUNT) - 1;

/** Direction modes of a top list and of a query: inbound, outbound, both. */
export const INBOUND = 0;
export const OUTBOUND = 1;
export const BOTH = 2;
export const TOP_MODES = 3;

/** Words of one contact bitmap (topBits, the query's bitmap scratch). */
export function bitmapWords(contactCount: number): number {
  return (contactCount + 31) >>> 5;
}

/**
 * Time rank of ordinal o: the first ordinal with the same sent_at (sent_at is non-increasing with
 * the ordinal), so equal times share it and ties go to the contact id. Galloping back from o, then
 * a binary search: one read when o's time is unique (the common case, and cache-friendly),
 * O(log k) for a tie of k messages however long.
 */
export function timeRank(sentAt: Float64Array, o: number): number {
  const t = sentAt[o];
  if (o === 0 || sentAt[o - 1] !== t) return o;
  let hi = o - 1; // sentAt[hi] === t
  let step = 1;
  let lo = hi - step;
  while (lo > 0 && sentAt[lo] === t) {
    hi = lo;
    step *= 2;
    lo = hi - step;
  }
  if (lo < 0) lo = 0;
  // sentAt[lo] > t or lo === 0; the answer is in [lo, hi]
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sentAt[mid] > t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** timeRank of every ordinal in one linear pass (for the build, which needs them all). */
export function timeRanks(sentAt: Float64Array): Uint32Array {
  const n = sentAt.length;
  const rank = new Uint32Array(n);
  for (let o = 1; o < n; o++) rank[o] = sentAt[o - 1] === sentAt[o] ? rank[o - 1] : o;
  return rank;
}
