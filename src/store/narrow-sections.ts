/**
 * A small organization's per-key columns in 16 bits, once it is loaded: one value a token or
 * pair of five columns (where each key's entries start, its message count, its frequency rank,
 * its top-list slot, where its text starts in the dictionary) were 32-bit words, ~8.4 KB of a
 * ~100-message organization's ~27 KB of sections and ~1.2 of a ~10-message one's 3.7. Their
 * values are below the organization's entries, messages, keys, dictionary bytes and top-list
 * slots, so 16 bits hold them all when it is small.
 *
 * Only in memory: snapshots keep 32 bits (the loader holds each section of the layout to one
 * type, so older servers read every snapshot a newer one writes), and the query reads these
 * columns a few times a term, never in a walk over entries, so either width serves it alike.
 */
import type { Section } from './section.js';

/** The narrowed columns and the type each takes when every value fits. */
const NARROWED: Readonly<Record<string, typeof Uint16Array | typeof Int16Array>> = {
  entryStart: Uint16Array,
  keyFrequency: Uint16Array,
  tokenRank: Uint16Array,
  tokenOffsets: Uint16Array,
  topSlot: Int16Array,
};

/**
 * The sections of an organization with at most 65,535 entries, each NARROWED column in 16 bits
 * when its values fit, to be copied into one shared block (with its dictionaries' lookup
 * sections, a block of their own until then); null for a larger organization, whose per-key
 * columns are a small part of it and not worth a copy of all its sections at load.
 */
export function narrowedSections(sections: Readonly<Record<string, Section>>): [string, Section][] | null {
  const entryStart = sections.entryStart;
  if (!(entryStart instanceof Uint32Array) || entryStart.length === 0 || entryStart[entryStart.length - 1] > 0xffff)
    return null;
  return Object.entries(sections).map(([name, a]) => {
    const To = Object.hasOwn(NARROWED, name) ? NARROWED[name] : undefined;
    const from = To === Int16Array ? Int32Array : Uint32Array;
    return [name, To !== undefined && a instanceof from && fits(a, To) ? To.from(a) : a];
  });
}

/** Whether every value of `a` is one of `To`'s. */
function fits(a: Uint32Array | Int32Array, To: typeof Uint16Array | typeof Int16Array): boolean {
  const min = To === Int16Array ? -0x8000 : 0,
    max = To === Int16Array ? 0x7fff : 0xffff;
  for (let i = 0; i < a.length; i++) if (a[i] < min || a[i] > max) return false;
  return true;
}
