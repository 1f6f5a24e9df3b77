/**
 * A flat index as the layout before conversations numbered by contact wrote it
 * (src/index/conversations.ts): msgConversation one Uint32 ordinal a message over the whole
 * organization, no contactConversationStart. For tests of the loader's renumbering of it. Needs
 * the export section msgContact (flattenIndex with exportColumns).
 */
import type { FlatIndex } from '../../src/store/flat-index.js';

export function toGlobalConversations(flat: FlatIndex): void {
  const s = flat.sections;
  const local = s.msgConversation as Uint16Array | Uint32Array,
    start = s.contactConversationStart as Uint32Array,
    contact = s.msgContact as Uint32Array;
  const global = new Uint32Array(local.length);
  for (let o = 0; o < local.length; o++) global[o] = start[contact[o]] + local[o];
  s.msgConversation = global;
  delete s.contactConversationStart;
}
