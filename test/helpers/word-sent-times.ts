/**
 * Sent times as the layout before blocks wrote them (src/index/sent-times-words.ts): three Uint16
 * words a message. For tests of the loader's conversion.
 */
import { decodeSentTimes, SENT_TIME_SECTIONS, type SentTimes } from '../../src/index/sent-times.js';
import { HIGH_UNIT, type WordSentTimes, WORDS } from '../../src/index/sent-times-words.js';
import type { FlatIndex } from '../../src/store/flat-index.js';

/** The sections of that layout for times `ms` (epoch ms, non-increasing): for tests of the loader's conversion. */
export function encodeWordSentTimes(ms: Float64Array): WordSentTimes {
  const n = ms.length;
  let min = Infinity,
    max = -Infinity;
  for (let o = 0; o < n; o++) {
    if (ms[o] < min) min = ms[o];
    if (ms[o] > max) max = ms[o];
  }
  const base = n === 0 ? 0 : Math.floor(min / 1000);
  const wide = n > 0 && Math.floor(max / 1000) - base >= HIGH_UNIT;
  const words = new Uint16Array(WORDS * n),
    high = new Uint16Array(wide ? n : 0);
  for (let o = 0; o < n; o++) {
    const t = ms[o];
    const s = Math.floor(t / 1000);
    const since = s - base;
    const low = since % HIGH_UNIT;
    words[WORDS * o] = low & 0xffff;
    words[WORDS * o + 1] = Math.floor(low / 0x10000);
    words[WORDS * o + 2] = t - s * 1000;
    if (wide) high[o] = Math.floor(since / HIGH_UNIT);
  }
  return { msgSentBase: Float64Array.of(base), msgSentWords: words, msgSentHigh: high };
}

/** Rewrites `flat`'s sent times in the layout before blocks. */
export function toWordSentTimes(flat: FlatIndex): void {
  const s = flat.sections;
  Object.assign(s, encodeWordSentTimes(decodeSentTimes(s as unknown as SentTimes)));
  for (const name of SENT_TIME_SECTIONS) delete s[name];
}
