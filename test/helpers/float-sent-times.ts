/**
 * A flat index as the layout before seconds and milliseconds apart wrote it
 * (src/index/sent-times.ts): every message's sent_at as epoch ms, msgSentAt, a Float64 each. For
 * tests of the loader's encoding of it.
 */
import { decodeSentTimes, SENT_TIME_SECTIONS, type SentTimes } from '../../src/index/sent-times.js';
import type { FlatIndex } from '../../src/store/flat-index.js';

export function toFloatSentTimes(flat: FlatIndex): void {
  const s = flat.sections;
  s.msgSentAt = decodeSentTimes(s as unknown as SentTimes);
  for (const name of SENT_TIME_SECTIONS) delete s[name];
}
