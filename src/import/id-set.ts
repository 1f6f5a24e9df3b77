import { doubledSlots } from '../model/hash-slots.js';

/**
 * The message ids of one organization seen so far, to refuse a duplicate (CONTRACT 9). It holds
 * no strings: an open-addressing table of (hash, index + 1) pairs, the index being where the id
 * sits in the caller's own column of ids, read back (`idAt`) only when a hash matches. A Set of
 * the id strings took 0.68 s of a 1M import's main thread, most of it in the collector: every
 * young string put into an old table is a pointer each scavenge has to visit.
 */
export class IdSet {
  /** (hash, index + 1) pairs (model/hash-slots.ts) */
  private slots = new Uint32Array(2 << 12);
  private size = 0;

  /** `idAt(i)`: the id added with index i (the caller keeps them; only read on a hash match). */
  constructor(private readonly idAt: (index: number) => string) {}

  /**
   * Adds `id`, which the caller keeps at `index` (indexes are added once each); returns false,
   * adding nothing, when it is already present.
   */
  add(id: string, index: number): boolean {
    let h = 0x811c9dc5; // FNV-1a over UTF-16 code units
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    h >>>= 0;
    const slots = this.slots;
    const mask = (slots.length >>> 1) - 1;
    let slot = h & mask;
    for (; ; slot = (slot + 1) & mask) {
      const stored = slots[2 * slot + 1];
      if (stored === 0) break;
      if (slots[2 * slot] === h && this.idAt(stored - 1) === id) return false;
    }
    slots[2 * slot] = h;
    slots[2 * slot + 1] = index + 1;
    // at most 3/4 full: doubled once an add passes it
    if (4 * ++this.size > 3 * (mask + 1)) this.slots = doubledSlots(slots);
    return true;
  }
}
