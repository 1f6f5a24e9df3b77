/**
 * A flat index as the layout before message rows wrote it (src/index/message-rows.ts): ids and
 * contents as two string columns, msgIdBytes/msgIdOffsets and msgContentBytes/msgContentOffsets,
 * no msgRowBytes/msgRowOffsets, and the token sequences' starts whole (seqByteStart). For tests of the loader's derivation of rows.
 */
import { contentStart, idStart } from '../../src/index/message-rows.js';
import { isPacked, unpackUuid } from '../../src/index/packed-uuid.js';
import type { FlatIndex } from '../../src/store/flat-index.js';
import { toWholeStarts } from './whole-starts.js';

export function toTwoColumns(flat: FlatIndex): void {
  // that layout came before block starts too
  toWholeStarts(flat);
  const s = flat.sections;
  const rows = s.msgRowBytes as Uint8Array,
    offsets = s.msgRowOffsets as Uint32Array;
  const n = offsets.length - 1;
  const idParts: Uint8Array[] = [],
    contentParts: Uint8Array[] = [];
  const idOffsets = new Uint32Array(n + 1),
    contentOffsets = new Uint32Array(n + 1);
  for (let o = 0; o < n; o++) {
    const row = offsets[o];
    // that layout kept every id as text: a packed one (packed-uuid.ts) is given back its text
    const from = idStart(rows, row),
      to = contentStart(rows, row);
    const id = isPacked(rows, from, to - from) ? Buffer.from(unpackUuid(rows, from)) : rows.subarray(from, to);
    const content = rows.subarray(contentStart(rows, row), offsets[o + 1]);
    idParts.push(id);
    contentParts.push(content);
    idOffsets[o + 1] = idOffsets[o] + id.length;
    contentOffsets[o + 1] = contentOffsets[o] + content.length;
  }
  delete s.msgRowBytes;
  delete s.msgRowOffsets;
  s.msgIdBytes = new Uint8Array(Buffer.concat(idParts));
  s.msgIdOffsets = idOffsets;
  s.msgContentBytes = new Uint8Array(Buffer.concat(contentParts));
  s.msgContentOffsets = contentOffsets;
}
