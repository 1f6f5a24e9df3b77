/**
 * A flat index as the layout before block starts wrote it (src/index/block-starts.ts): the
 * message rows' starts and the token sequences' starts as one Uint32 a message, msgRowOffsets and
 * seqByteStart, and the posting starts in a column of their own (separate-post-starts.ts). For tests
 * of the loader's encoding of them.
 */
import { decodeBlockStarts } from '../../src/index/block-starts.js';
import type { FlatIndex } from '../../src/store/flat-index.js';
import { toSeparatePostStarts } from './separate-post-starts.js';

const GROUPS = [
  ['msgRowOffsets', 'msgRowStartBase', 'msgRowStartDelta', 'msgRowStartFar'],
  ['seqByteStart', 'seqStartBase', 'seqStartDelta', 'seqStartFar'],
] as const;

export function toWholeStarts(flat: FlatIndex): void {
  // that layout came before posting starts in the entry words too
  toSeparatePostStarts(flat);
  const s = flat.sections;
  for (const [whole, base, delta, far] of GROUPS) {
    s[whole] = decodeBlockStarts(
      { base: s[base] as Uint32Array, delta: s[delta] as Uint16Array, far: s[far] as Uint32Array },
      flat.messageCount + 1,
    );
    delete s[base];
    delete s[delta];
    delete s[far];
  }
}
