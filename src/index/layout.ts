/**
 * The encodings of the index (see org-index.ts), in one place: the index build writes them and the
 * query reads them, so both import them from here.
 */
import { CHANNELS } from '../model/records.js';
import { type PostStarts, postStart, rankBits } from './post-starts.js';
import { type SentTimes, sameSentAt, sentCount } from './sent-times.js';

/** The "nothing" of a Uint32Array column: no newest message in a direction, no pair, not seen. */
export const NONE = 0xffffffff;

/** Channels of a direction: a message's combo (msgCombo) is direction * CHANNEL_COUNT + channel. */
export const CHANNEL_COUNT = CHANNELS.length;

/** The combo of a message (direction 0 inbound, 1 outbound; channel an index into CHANNELS). */
export function comboOf(direction: number, channel: number): number {
  return direction * CHANNEL_COUNT + channel;
}

/**
 * msgCombo's bit 7: message o's sent_at equals message o - 1's, so its time rank is not its own
 * ordinal (timeRank). Set on every load from the sent times (markTies), so a snapshot's own bits are
 * never trusted. A filter's test `(1 << msgCombo[o]) & mask` ignores it: a shift count is taken
 * modulo 32. Reads of the combo as a number take COMBO_VALUE of it.
 */
export const TIED = 0x80;
export const COMBO_VALUE = 0x7f;

/** Sets TIED in combo[o] exactly where message o's sent_at equals message o - 1's (non-increasing). */
export function markTies(times: SentTimes, combo: Uint8Array): void {
  const n = combo.length;
  if (n > 0) combo[0] &= COMBO_VALUE;
  for (let o = 1; o < n; o++) combo[o] = (combo[o] & COMBO_VALUE) | (sameSentAt(times, o, o - 1) ? TIED : 0);
}

/** Time rank of message o whose combo (TIED bit included) is `combo`: its ordinal unless tied. */
export function rankOf(times: SentTimes, o: number, combo: number): number {
  return (combo & TIED) === 0 ? o : timeRank(times, o);
}

/** Bits of the inbound combos in a combo mask (entryFlags, a filter mask); the rest are outbound. */
export const INBOUND_COMBOS = (1 << CHANNEL_COUNT) - 1;

/**
 * entryFlags (one Uint16 an entry) holds, besides the combo mask in its low 2 * CHANNEL_COUNT bits,
 * where the entry's newest outbound message is, so that it needs no column of its own (a Uint32
 * column was 4 bytes an entry, 13 B a message at 1M). Inbound is the default direction of a query,
 * so its newest keeps a column (entryNewestIn); outbound and both read one posting more.
 * - OUT_SHIFT.. (4 bits): 0 no outbound message; 1 .. OUT_FAR - 1: it is the entry's message
 *   (code - 1), counting the head (below); OUT_FAR: message OUT_FAR - 1 or later (a long run of
 *   inbound messages first; scan).
 * - HEAD_INLINE (bit 14): the entry's first (newest) message is not in storedPostings: its
 *   ordinal is entryNewestIn's (entryHead). 71% of the entries have one message, and most first
 *   messages are either the newest inbound one with a time of its own (entryNewestIn holds its
 *   ordinal already) or of an entry without inbound messages (entryNewestIn holds
 *   noInbound | its ordinal): 23 B a message at 1M that the postings no longer repeat.
 * - OUT_UNTIED (bit 15): its sent_at differs from the message before it, so its time rank is its
 *   ordinal and no sent_at is read (the common case; ties take timeRank).
 */
export const COMBO_BITS = (1 << (2 * CHANNEL_COUNT)) - 1;
/** Bits of the outbound combos in a combo mask. */
export const OUTBOUND_COMBOS = COMBO_BITS & ~INBOUND_COMBOS;
export const OUT_SHIFT = 2 * CHANNEL_COUNT;
export const OUT_FAR = 15;
export const HEAD_INLINE = 0x4000;
export const OUT_UNTIED = 0x8000;
if (OUT_SHIFT + 4 > 14) throw new Error('layout: the combos leave no room for entryFlags');

/**
 * entryNewestIn's rank field (the low rankBits(messageCount) bits of each word; post-starts.ts
 * keeps the entry's posting start above them): the time rank of the entry's newest inbound
 * message, or, for an entry without inbound messages, noInbound(messageCount) and the ordinal of
 * its first message (the head, always inline then). noInbound is above every time rank and every
 * window's end, so a test `r >= hi` or `r < noInbound` of the field reads "no inbound message".
 */
export function noInbound(messageCount: number): number {
  return 1 << (rankBits(messageCount) - 1);
}

/** The mask of entryNewestIn's rank field (noInbound's bit and every ordinal's). */
export function rankMask(messageCount: number): number {
  return 0xffffffff >>> (32 - rankBits(messageCount));
}

/** The columns newestOutbound and newestOfEntry read (an OrgIndex has them; the build passes its own). */
export interface EntryNewestColumns extends PostStarts, SentTimes {
  readonly entryFlags: Uint16Array;
  readonly storedPostings: Uint32Array;
  readonly msgCombo: Uint8Array;
}

/** Ordinal of entry e's first message when its flags have HEAD_INLINE (not in storedPostings). */
export function entryHead(
  x: { readonly entryNewestIn: Uint32Array; readonly messageCount: number },
  e: number,
): number {
  return x.entryNewestIn[e] & (noInbound(x.messageCount) - 1);
}

/**
 * Entry e's messages, newest first, whatever is inline (tests and tools; the query reads the
 * head and the stored postings itself, without an array).
 */
export function entryOrdinals(x: EntryNewestColumns, e: number): number[] {
  const out: number[] = [];
  if ((x.entryFlags[e] & HEAD_INLINE) !== 0) out.push(entryHead(x, e));
  for (let p = postStart(x, e), end = postStart(x, e + 1); p < end; p++) out.push(x.storedPostings[p]);
  return out;
}

/**
 * Time rank of entry e's newest outbound message, or -1 (never NONE: a value outside the
 * small-integer range returned from a call is boxed). One posting read, near the entry's start,
 * or none when it is the inline head.
 */
export function newestOutbound(x: EntryNewestColumns, e: number): number {
  const f = x.entryFlags[e];
  const code = (f >>> OUT_SHIFT) & OUT_FAR;
  if (code === 0) return -1;
  let o: number;
  const inline = (f & HEAD_INLINE) !== 0;
  if (code === 1 && inline) o = entryHead(x, e);
  else {
    const postings = x.storedPostings;
    // message (code - 1) of the entry, the inline head not being stored
    let p = postStart(x, e) + code - 1 - (inline ? 1 : 0);
    if (code === OUT_FAR) {
      // rare: 14 or more newer inbound messages first; the flags say an outbound one follows
      const { msgCombo } = x;
      const end = postStart(x, e + 1);
      while (p < end && (msgCombo[postings[p]] & COMBO_VALUE) < CHANNEL_COUNT) p++;
      if (p === end) return -1;
    }
    o = postings[p];
  }
  return (f & OUT_UNTIED) !== 0 ? o : timeRank(x, o);
}

/** Time rank of entry e's newest message in either direction (every entry has one). */
export function newestOfEntry(x: EntryNewestColumns, e: number): number {
  // the newest outbound is the entry's first posting exactly when it is the newest message
  return ((x.entryFlags[e] >>> OUT_SHIFT) & OUT_FAR) === 1
    ? newestOutbound(x, e)
    : x.entryNewestIn[e] & rankMask(x.messageCount);
}

/** Time rank of entry e's newest message of `direction` (INBOUND, OUTBOUND, BOTH), or -1. */
export function newestOf(x: EntryNewestColumns, e: number, direction: number): number {
  if (direction === INBOUND) {
    const r = x.entryNewestIn[e] & rankMask(x.messageCount);
    return r >= noInbound(x.messageCount) ? -1 : r;
  }
  return direction === OUTBOUND ? newestOutbound(x, e) : newestOfEntry(x, e);
}

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
export function timeRank(times: SentTimes, o: number): number {
  if (o === 0 || !sameSentAt(times, o - 1, o)) return o;
  // every ordinal before o was sent at o's time or later, so "not sent at o's time" is "later":
  // equality of the stored words is all the search compares (no instant is computed)
  let hi = o - 1; // sent at o's time
  let step = 1;
  let lo = hi - step;
  while (lo > 0 && sameSentAt(times, lo, o)) {
    hi = lo;
    step *= 2;
    lo = hi - step;
  }
  if (lo < 0) lo = 0;
  // lo sent later than o, or lo === 0; the answer is in [lo, hi]
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (!sameSentAt(times, mid, o)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** timeRank of every ordinal in one linear pass (for the build, which needs them all). */
export function timeRanks(times: SentTimes): Uint32Array {
  const n = sentCount(times);
  const rank = new Uint32Array(n);
  for (let o = 1; o < n; o++) rank[o] = sameSentAt(times, o - 1, o) ? rank[o - 1] : o;
  return rank;
}
