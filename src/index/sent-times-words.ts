/**
 * The sent times of the layout before blocks (sent-times.ts): three Uint16 words a message (its
 * whole seconds since the organization's oldest second, low half and high half, then its
 * milliseconds), msgSentHigh for seconds' bits above 32 (empty unless a time is 136 years or more
 * after the oldest), msgSentBase the oldest second. A snapshot written so is checked here and its
 * times decoded, then encoded as blocks on load, so it keeps loading without being published
 * again.
 */
import { DATE_LIMIT } from './sent-times.js';

/** The sections of the layout before blocks. */
export interface WordSentTimes {
  readonly msgSentBase: Float64Array;
  readonly msgSentWords: Uint16Array;
  readonly msgSentHigh: Uint16Array;
}

/** Their names and element types, as a snapshot of that layout has them. */
export const WORD_SENT_SECTIONS = {
  msgSentBase: 'Float64Array',
  msgSentWords: 'Uint16Array',
  msgSentHigh: 'Uint16Array',
} as const;

/** Words a message. */
export const WORDS = 3;
/** What a unit of msgSentHigh is worth, in seconds. */
export const HIGH_UNIT = 0x100000000;

/** Message o's sent_at in epoch ms. */
function wordSentAtOf(x: WordSentTimes, o: number): number {
  const w = x.msgSentWords,
    high = x.msgSentHigh,
    at = WORDS * o;
  const seconds =
    x.msgSentBase[0] + ((w[at] | (w[at + 1] << 16)) >>> 0) + (high.length === 0 ? 0 : high[o] * HIGH_UNIT);
  return seconds * 1000 + w[at + 2];
}

/**
 * The epoch ms of n messages of that layout, or null when its sections do not have their shape:
 * an integer base, 3n words, the high column empty or n long, milliseconds below 1000, every
 * instant within a Date's range and non-increasing with the ordinal.
 */
export function decodeWordSentTimes(x: WordSentTimes, n: number): Float64Array | null {
  const base = x.msgSentBase,
    w = x.msgSentWords,
    high = x.msgSentHigh;
  if (base.length !== 1 || !Number.isSafeInteger(base[0]) || w.length !== WORDS * n) return null;
  if (high.length !== 0 && high.length !== n) return null;
  const out = new Float64Array(n);
  for (let o = 0; o < n; o++) {
    if (w[WORDS * o + 2] >= 1000) return null;
    const t = wordSentAtOf(x, o);
    if (o > 0 && t > out[o - 1]) return null;
    out[o] = t;
  }
  return n === 0 || (out[0] <= DATE_LIMIT && out[n - 1] >= -DATE_LIMIT) ? out : null;
}
