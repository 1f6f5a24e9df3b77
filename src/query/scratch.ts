import type { OrgIndex } from '../index/org-index.js';

/**
 * Per-index working memory reused by every query on that index (queries run synchronously on
 * one thread, so one set is enough). Generation stamps replace clearing between queries.
 */
export interface Scratch {
  generation: number;
  contactStamp: Uint32Array;
  contactCount: Uint32Array;
  contactMask: Uint16Array;
  contactConversations: Uint32Array;
  contactNewest: Uint32Array;
  contactOldest: Uint32Array;
  contactPageSlot: Int32Array;
  conversationStamp: Uint32Array;
  /** contacts in first-touched order */
  touched: Uint32Array;
  /** counting message ordinals in ascending order */
  counting: Uint32Array;
}

const scratches = new WeakMap<OrgIndex, Scratch>();

export function scratchFor(index: OrgIndex): Scratch {
  let s = scratches.get(index);
  if (s === undefined) {
    const c = index.contactCount;
    s = {
      generation: 0,
      contactStamp: new Uint32Array(c),
      contactCount: new Uint32Array(c),
      contactMask: new Uint16Array(c),
      contactConversations: new Uint32Array(c),
      contactNewest: new Uint32Array(c),
      contactOldest: new Uint32Array(c),
      contactPageSlot: new Int32Array(c),
      conversationStamp: new Uint32Array(index.conversationIds.length),
      touched: new Uint32Array(c),
      counting: new Uint32Array(index.messageCount),
    };
    scratches.set(index, s);
  }
  if (++s.generation === 0xffffffff) {
    s.generation = 1;
    s.contactStamp.fill(0);
    s.conversationStamp.fill(0);
  }
  return s;
}
