import type { OrgIndex } from '../index/org-index.js';
import { textView } from '../index/string-column.js';

/**
 * Per-index working memory reused by every query on that index (queries run synchronously on
 * one thread, so one set is enough). A generation stamp replaces clearing between queries.
 */
export interface Scratch {
  generation: number;
  /** sort keys of the matching contacts (see contactKey in execute.ts) */
  keys: Float64Array;
  /** max-heap for choosing the smallest keys of a page */
  heap: Float64Array;
  conversationStamp: Uint32Array;
  /** per contact ordinal, for several terms: generation seen, newest rank, terms passed */
  contactStamp: Uint32Array;
  contactBest: Uint32Array;
  contactHits: Uint8Array;
  /** contact ordinals seen by this query, in first-seen order */
  touched: Uint32Array;
  /** Buffer views of the index's string columns */
  ids: Buffer;
  contents: Buffer;
  conversations: Buffer;
}

const scratches = new WeakMap<OrgIndex, Scratch>();

export function scratchFor(index: OrgIndex): Scratch {
  let s = scratches.get(index);
  if (s === undefined) {
    s = {
      generation: 0,
      keys: new Float64Array(index.contactCount),
      heap: new Float64Array(index.contactCount),
      conversationStamp: new Uint32Array(index.conversationIdOffsets.length - 1),
      contactStamp: new Uint32Array(index.contactCount),
      contactBest: new Uint32Array(index.contactCount),
      contactHits: new Uint8Array(index.contactCount),
      touched: new Uint32Array(index.contactCount),
      ids: textView(index.msgIdBytes),
      contents: textView(index.msgContentBytes),
      conversations: textView(index.conversationIdBytes),
    };
    scratches.set(index, s);
  }
  if (++s.generation === 0xffffffff) {
    s.generation = 1;
    s.conversationStamp.fill(0);
    s.contactStamp.fill(0);
  }
  return s;
}
