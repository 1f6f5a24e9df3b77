/**
 * Every message's sent_at (epoch ms, an integer), by ordinal, in 6 bytes a message or 4 instead of
 * a Float64's 8: the whole seconds since the organization's oldest second in a Uint32, and the
 * milliseconds in a Uint16 column that is empty when every time is a whole second (data stamped
 * by the second). 2 MiB less at 1M messages with milliseconds, 4 MiB less without. A time 136
 * years or more after the oldest (possible, not seen) keeps the seconds' high bits in a third
 * column, empty otherwise, so any instant a Date holds is kept exactly.
 */

/** The columns of the sent times (an OrgIndex has them; the build and the loader make them). */
export interface SentTimes {
  /** one value: the oldest message's whole second (epoch seconds, an integer, maybe negative) */
  readonly msgSentBase: Float64Array;
  /** each message's seconds since msgSentBase[0], low 32 bits */
  readonly msgSentSec: Uint32Array;
  /** the seconds' bits above 32, a message each; empty when every message fits in msgSentSec */
  readonly msgSentHigh: Uint16Array;
  /** each message's milliseconds within its second (0-999); empty when they are all 0 */
  readonly msgSentMilli: Uint16Array;
}

/** The section names of SentTimes, as the snapshot names them. */
export const SENT_TIME_SECTIONS = ['msgSentBase', 'msgSentSec', 'msgSentHigh', 'msgSentMilli'] as const;

const LOW = 0x100000000;

/** Message o's sent_at in epoch seconds (whole), a double. */
export function sentSecondsOf(x: SentTimes, o: number): number {
  const high = x.msgSentHigh;
  return x.msgSentBase[0] + x.msgSentSec[o] + (high.length === 0 ? 0 : high[o] * LOW);
}

/** Message o's milliseconds within its second. */
export function sentMilliOf(x: SentTimes, o: number): number {
  const milli = x.msgSentMilli;
  return milli.length === 0 ? 0 : milli[o];
}

/** Message o's sent_at in epoch ms. */
export function sentAtOf(x: SentTimes, o: number): number {
  return sentSecondsOf(x, o) * 1000 + sentMilliOf(x, o);
}

/** Whether messages a and b were sent at the same instant. */
export function sameSentAt(x: SentTimes, a: number, b: number): boolean {
  const high = x.msgSentHigh,
    milli = x.msgSentMilli;
  return (
    x.msgSentSec[a] === x.msgSentSec[b] &&
    (milli.length === 0 || milli[a] === milli[b]) &&
    (high.length === 0 || high[a] === high[b])
  );
}

/** The sent times of `sentAt` (integer epoch ms within a Date's range, any order). */
export function encodeSentTimes(sentAt: Float64Array): SentTimes {
  const n = sentAt.length;
  let min = Infinity,
    max = -Infinity,
    whole = true;
  for (let o = 0; o < n; o++) {
    const t = sentAt[o];
    if (!Number.isSafeInteger(t)) throw new Error(`sent times: message ${o} has no integer instant (${t})`);
    if (t < min) min = t;
    if (t > max) max = t;
    if (whole && t % 1000 !== 0) whole = false;
  }
  const base = n === 0 ? 0 : Math.floor(min / 1000);
  const wide = n > 0 && Math.floor(max / 1000) - base >= LOW;
  const sec = new Uint32Array(n),
    high = new Uint16Array(wide ? n : 0),
    milli = new Uint16Array(whole ? 0 : n);
  for (let o = 0; o < n; o++) {
    const t = sentAt[o];
    const s = Math.floor(t / 1000);
    const since = s - base;
    sec[o] = since % LOW;
    if (wide) high[o] = Math.floor(since / LOW);
    if (!whole) milli[o] = t - s * 1000;
  }
  return { msgSentBase: Float64Array.of(base), msgSentSec: sec, msgSentHigh: high, msgSentMilli: milli };
}

/** sent_at of every message, as epoch ms (exports, tools). */
export function decodeSentTimes(x: SentTimes): Float64Array {
  const n = x.msgSentSec.length;
  const out = new Float64Array(n);
  for (let o = 0; o < n; o++) out[o] = sentAtOf(x, o);
  return out;
}

/** A Date's range, in ms: what sent_at may be. */
const DATE_LIMIT = 8.64e15;

/**
 * Whether loaded sent times have their shape: n messages, an integer base, the optional columns
 * empty or n long, milliseconds below 1000, every instant within a Date's range, and non-increasing
 * with the ordinal (binary searches and time ranks rely on it).
 */
export function sentTimesFit(x: SentTimes, n: number): boolean {
  const base = x.msgSentBase,
    sec = x.msgSentSec,
    high = x.msgSentHigh,
    milli = x.msgSentMilli;
  if (base.length !== 1 || !Number.isSafeInteger(base[0]) || sec.length !== n) return false;
  if ((high.length !== 0 && high.length !== n) || (milli.length !== 0 && milli.length !== n)) return false;
  for (let o = 0; o < milli.length; o++) if (milli[o] >= 1000) return false;
  // the order compared part by part, in small integers: sentAtOf's doubles, a million of them,
  // were garbage (boxed before the loop is optimized) that held the young generation 2.6 MiB larger
  const wide = high.length !== 0,
    whole = milli.length === 0;
  for (let o = 1; o < n; o++) {
    const h = wide ? high[o] - high[o - 1] : 0;
    if (h > 0) return false;
    if (h < 0) continue;
    const d = sec[o] - sec[o - 1];
    if (d > 0 || (d === 0 && !whole && milli[o] > milli[o - 1])) return false;
  }
  // non-increasing: the newest and the oldest bound the rest
  return n === 0 || (sentAtOf(x, 0) <= DATE_LIMIT && sentAtOf(x, n - 1) >= -DATE_LIMIT);
}
