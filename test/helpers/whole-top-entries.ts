/**
 * A flat index as the layout before top-list offsets wrote it (src/index/top-lists.ts): each
 * list's entries as whole entry positions (topEntries, a Uint32 each), no topOffsets. For tests of
 * the loader's conversion of it.
 */
import { TOP_MODES } from '../../src/index/layout.js';
import type { FlatIndex } from '../../src/store/flat-index.js';

export function toWholeTopEntries(flat: FlatIndex): void {
  const s = flat.sections;
  const entryStart = s.entryStart as Uint32Array,
    topSlot = s.topSlot as Int32Array,
    topStart = s.topStart as Uint32Array,
    offsets = s.topOffsets as Uint16Array | Uint32Array;
  const whole = new Uint32Array(offsets.length);
  for (let t = 0; t < topSlot.length; t++) {
    const slot = topSlot[t];
    if (slot < 0) continue;
    for (let p = topStart[slot * TOP_MODES]; p < topStart[(slot + 1) * TOP_MODES]; p++)
      whole[p] = entryStart[t] + offsets[p];
  }
  s.topEntries = whole;
  delete s.topOffsets;
}
