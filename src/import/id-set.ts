import { doubledSlots } from '../model/hash-slots.js';
import type { IdColumn } from '../model/id-column.js';

/**
 * The message ids of one organization seen so far, to refuse a duplicate (CONTRACT 9). It holds
 * no strings: an open-addressing table of (hash, index + 1) pairs, the index being where the id
 * sits in the organization's IdColumn, compared there only when a hash matches. A Set of the id
 * strings took 0.68 s of a 1M import's main thread, most of it in the collector.
 */
export class IdSet {
  /** (hash, index + 1) pairs (model/hash-slots.ts) */
  private slots = new Uint32Array(2 << 8);
  private size = 0;

  /** `ids`: the column the caller appends every id to before adding its index here. */
  constructor(private readonly ids: IdColumn) {}

  /**
   * Adds the id at `index` of the column (indexes are added once each, in any order); returns
   * false, adding nothing, when an id added before is the same.
   */
  add(index: number): boolean {
    const ids = this.ids;
    const h = ids.hash(index);
    const slots = this.slots;
    const mask = (slots.length >>> 1) - 1;
    let slot = h & mask;
    for (; ; slot = (slot + 1) & mask) {
      const stored = slots[2 * slot + 1];
      if (stored === 0) break;
      if (slots[2 * slot] === h && ids.same(stored - 1, index)) return false;
    }
    slots[2 * slot] = h;
    slots[2 * slot + 1] = index + 1;
    // at most 3/4 full: doubled once an add passes it
    if (4 * ++this.size > 3 * (mask + 1)) this.slots = doubledSlots(slots);
    return true;
  }
}
