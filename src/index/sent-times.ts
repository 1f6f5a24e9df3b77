/**
 * Every message's sent_at (epoch ms, an integer), by ordinal, in 6 bytes a message instead of a
 * Float64's 8: three Uint16 words, side by side, so that a timestamp is one cache line: its whole
 * seconds since the organization's oldest second (low half, high half), then its milliseconds.
 * 2 MiB less at 1M messages. (The seconds and the milliseconds in two columns of their own were
 * 2-3% slower on pages of many messages, a second cache miss a timestamp; bench/RESULTS.md.)
 * A time 136 years or more after the oldest (possible, not seen) keeps the seconds' bits above 32
 * in a column of its own, empty otherwise, so any instant a Date holds is kept exactly.
 */

/** The columns of the sent times (an OrgIndex has them; the build and the loader make them). */
export interface SentTimes {
  /** one value: the oldest message's whole second (epoch seconds, an integer, maybe negative) */
  readonly msgSentBase: Float64Array;
  /** three words a message: seconds since msgSentBase[0] (low 16 bits, next 16), milliseconds (0-999) */
  readonly msgSentWords: Uint16Array;
  /** the seconds' bits above 32, a message each; empty when every message fits in its words */
  readonly msgSentHigh: Uint16Array;
}

/** The section names of SentTimes, as the snapshot names them. */
export const SENT_TIME_SECTIONS = ['msgSentBase', 'msgSentWords', 'msgSentHigh'] as const;

/** Words of msgSentWords a message. */
export const SENT_WORDS = 3;
/** What a unit of msgSentHigh is worth, in seconds. */
export const HIGH_UNIT = 0x100000000;

/** Messages of the sent times. */
export function sentCount(x: SentTimes): number {
  return x.msgSentWords.length / SENT_WORDS;
}

/**
 * Message o's sent_at in epoch ms. Above the small-integer range: a call that is not inlined
 * returns it boxed, a heap number each time, so the request path (the body writer's isoAt, the
 * date window's firstSentBefore) reads the words in its own body instead.
 */
export function sentAtOf(x: SentTimes, o: number): number {
  const w = x.msgSentWords,
    high = x.msgSentHigh,
    at = SENT_WORDS * o;
  const seconds =
    x.msgSentBase[0] + ((w[at] | (w[at + 1] << 16)) >>> 0) + (high.length === 0 ? 0 : high[o] * HIGH_UNIT);
  return seconds * 1000 + w[at + 2];
}

/**
 * The first ordinal sent before `ms`, or at `ms` too when `orAt`: the date window's ends, as
 * sent_at is non-increasing. A binary search that reads the words itself (see sentAtOf).
 */
export function firstSentBefore(x: SentTimes, ms: number, orAt: boolean): number {
  const w = x.msgSentWords,
    high = x.msgSentHigh,
    base = x.msgSentBase[0];
  let lo = 0,
    hi = w.length / SENT_WORDS;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = SENT_WORDS * mid;
    const seconds = base + ((w[at] | (w[at + 1] << 16)) >>> 0) + (high.length === 0 ? 0 : high[mid] * HIGH_UNIT);
    const t = seconds * 1000 + w[at + 2];
    if (orAt ? t > ms : t >= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether messages a and b were sent at the same instant. */
export function sameSentAt(x: SentTimes, a: number, b: number): boolean {
  const w = x.msgSentWords,
    high = x.msgSentHigh,
    i = SENT_WORDS * a,
    j = SENT_WORDS * b;
  return w[i] === w[j] && w[i + 1] === w[j + 1] && w[i + 2] === w[j + 2] && (high.length === 0 || high[a] === high[b]);
}

/** The sent times of `sentAt` (integer epoch ms within a Date's range, any order). */
export function encodeSentTimes(sentAt: Float64Array): SentTimes {
  const n = sentAt.length;
  let min = Infinity,
    max = -Infinity;
  for (let o = 0; o < n; o++) {
    const t = sentAt[o];
    if (!Number.isSafeInteger(t)) throw new Error(`sent times: message ${o} has no integer instant (${t})`);
    if (t < min) min = t;
    if (t > max) max = t;
  }
  const base = n === 0 ? 0 : Math.floor(min / 1000);
  const wide = n > 0 && Math.floor(max / 1000) - base >= HIGH_UNIT;
  const words = new Uint16Array(SENT_WORDS * n),
    high = new Uint16Array(wide ? n : 0);
  for (let o = 0; o < n; o++) {
    const t = sentAt[o];
    const s = Math.floor(t / 1000);
    const since = s - base;
    const low = since % HIGH_UNIT;
    words[SENT_WORDS * o] = low & 0xffff;
    words[SENT_WORDS * o + 1] = Math.floor(low / 0x10000);
    words[SENT_WORDS * o + 2] = t - s * 1000;
    if (wide) high[o] = Math.floor(since / HIGH_UNIT);
  }
  return { msgSentBase: Float64Array.of(base), msgSentWords: words, msgSentHigh: high };
}

/** sent_at of every message, as epoch ms, by ordinal: encodeSentTimes' inverse (tests write the layout before with it). */
export function decodeSentTimes(x: SentTimes): Float64Array {
  const n = sentCount(x);
  const out = new Float64Array(n);
  for (let o = 0; o < n; o++) out[o] = sentAtOf(x, o);
  return out;
}

/** A Date's range, in ms: what sent_at may be. */
const DATE_LIMIT = 8.64e15;

/**
 * Whether loaded sent times have their shape: n messages, an integer base, the high column empty
 * or n long, milliseconds below 1000, every instant within a Date's range, and non-increasing with
 * the ordinal (binary searches and time ranks rely on it).
 */
export function sentTimesFit(x: SentTimes, n: number): boolean {
  const base = x.msgSentBase,
    w = x.msgSentWords,
    high = x.msgSentHigh;
  if (base.length !== 1 || !Number.isSafeInteger(base[0]) || w.length !== SENT_WORDS * n) return false;
  if (high.length !== 0 && high.length !== n) return false;
  // the order compared part by part, in small integers: sentAtOf's doubles, a million of them,
  // were garbage (boxed before the loop is optimized) that held the young generation 2.6 MiB larger
  const wide = high.length !== 0;
  for (let o = 0; o < n; o++) {
    const at = SENT_WORDS * o;
    if (w[at + 2] >= 1000) return false;
    if (o === 0) continue;
    const h = wide ? high[o] - high[o - 1] : 0;
    if (h > 0) return false;
    if (h < 0) continue;
    const d = w[at + 1] - w[at - 2] || w[at] - w[at - 3] || w[at + 2] - w[at - 1];
    if (d > 0) return false;
  }
  // non-increasing: the newest and the oldest bound the rest
  return n === 0 || (sentAtOf(x, 0) <= DATE_LIMIT && sentAtOf(x, n - 1) >= -DATE_LIMIT);
}
