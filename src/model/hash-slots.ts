/**
 * Open-addressing tables of word pairs: slot s is slots[2s] (a 32-bit hash) and slots[2s + 1]
 * (a value + 1; 0 marks an empty slot), probed linearly from hash & mask. The hash beside the value
 * lets a probe reject other keys from the one cache line it reads. The token interner and the
 * import's id set keep their keys elsewhere and compare them on a hash match; both place and grow
 * their tables here.
 */

/** Puts (h, stored) in the first empty slot from h's (the table has one). */
export function placeSlot(slots: Uint32Array, h: number, stored: number): void {
  const mask = (slots.length >>> 1) - 1;
  let slot = h & mask;
  while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
  slots[2 * slot] = h;
  slots[2 * slot + 1] = stored;
}

/** A table of twice as many slots holding every pair of `slots`. */
export function doubledSlots(slots: Uint32Array): Uint32Array<ArrayBuffer> {
  const next = new Uint32Array(slots.length * 2);
  for (let s = 0; s < slots.length; s += 2) if (slots[s + 1] !== 0) placeSlot(next, slots[s], slots[s + 1]);
  return next;
}
