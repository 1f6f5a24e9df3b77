import {
  bitmapWords,
  type EntryNewestColumns,
  INBOUND_COMBOS,
  newestOf,
  OUTBOUND_COMBOS,
  TOP_MODES,
} from './layout.js';
import { lowerBound } from './lower-bound.js';
import { type ContactColumn, contactColumn } from './org-index.js';
import { offerKey } from './select.js';

/**
 * The first contacts of a frequent token's answer, precomputed for each direction: the page of
 * the commonest query (one plain term, no date or channel filter) without reading every entry of
 * the token (17k for a common word at 1M messages) and choosing the page among them.
 *
 * Slot s of token t = topSlot[t] (or -1: the token is rare enough to scan). For mode m (0 inbound,
 * 1 outbound, 2 both), topOffsets[topStart[s * 3 + m] .. topStart[s * 3 + m + 1]) are entries of t
 * (entryStart[t] + the offset) in answer order (newest time rank first, then contact id rank), and
 * topCount[s * 3 + m] is how many contacts match in all (the page's `count`). A list holds at most
 * `length` entries, so it answers a page only when offset + limit fits in it (or the list is whole).
 * An offset is below the token's entry count, so below the contact count: 16 bits when
 * entryContact is (1 MiB less at 1M than whole entry positions; a snapshot with those converts on load).
 */
export interface TopLists {
  topSlot: Int32Array;
  topStart: Uint32Array;
  topCount: Uint32Array;
  topOffsets: ContactColumn;
  /**
   * per slot, two bitmaps over contact ordinals (ceil(contactCount / 32) words each): the contacts
   * with an inbound message with the token (words (2s) * W ..), then with an outbound one: the
   * exact `count` of several terms is then a few word-wise ORs or ANDs and a popcount
   */
  topBits: Uint32Array;
}

export interface TopListOptions {
  /**
   * tokens with at least this many entries (contacts) get lists, and at least contactCount / 16:
   * scanning fewer is cheap, and then a token's two bitmaps cost at most 4 bytes an entry
   */
  minEntries: number;
  /** entries kept a list: covers the first page at the largest limit (100) and then some */
  length: number;
}

export const TOP_LIST_DEFAULTS: TopListOptions = { minEntries: 1024, length: 256 };

/** Builds the top lists from the entry columns (see OrgIndex); pure, linear in the entries listed. */
export function buildTopLists(
  columns: EntryNewestColumns & {
    entryStart: Uint32Array;
    entryContact: ContactColumn;
    contactIdRank: Uint32Array;
    contactByIdRank: Uint32Array;
  },
  options: TopListOptions = TOP_LIST_DEFAULTS,
): TopLists {
  const { entryStart, entryContact, entryFlags, contactIdRank, contactByIdRank } = columns;
  const contactCount = contactIdRank.length;
  const keyCount = entryStart.length - 1;
  const topSlot = new Int32Array(keyCount).fill(-1);
  let slots = 0;
  const minEntries = Math.max(options.minEntries, Math.ceil(contactCount / 16), 1);
  for (let t = 0; t < keyCount; t++) {
    if (entryStart[t + 1] - entryStart[t] >= minEntries) topSlot[t] = slots++;
  }
  const topStart = new Uint32Array(slots * TOP_MODES + 1);
  const topCount = new Uint32Array(slots * TOP_MODES);
  const words = bitmapWords(contactCount);
  const topBits = new Uint32Array(slots * 2 * words);
  const lists: Uint32Array[] = [];
  const length = options.length;
  const heap = new Float64Array(length);
  let filled = 0;
  for (let t = 0; t < keyCount; t++) {
    const s = topSlot[t];
    if (s < 0) continue;
    const from = entryStart[t],
      to = entryStart[t + 1];
    const inBits = 2 * s * words,
      outBits = inBits + words;
    for (let e = from; e < to; e++) {
      const c = entryContact[e];
      if ((entryFlags[e] & INBOUND_COMBOS) !== 0) topBits[inBits + (c >>> 5)] |= 1 << (c & 31);
      if ((entryFlags[e] & OUTBOUND_COMBOS) !== 0) topBits[outBits + (c >>> 5)] |= 1 << (c & 31);
    }
    for (let m = 0; m < TOP_MODES; m++) {
      // the key of matchContacts: time rank of the newest message in the direction, then id rank;
      // the list's keys kept in a bounded heap as they come, and once it is full a rank whose
      // every key is above its largest is passed over without the contact's id rank (a random
      // read) or a key written (10M import: the top lists took 2.6 s with every key written and
      // selected after)
      let n = 0;
      let size = 0;
      for (let e = from; e < to; e++) {
        const r = newestOf(columns, e, m);
        if (r < 0) continue;
        n++;
        if (size === length && r * contactCount > heap[0]) continue;
        size = offerKey(heap, size, length, r * contactCount + contactIdRank[entryContact[e]]);
      }
      const need = size;
      const top = heap.subarray(0, size).sort();
      const list = new Uint32Array(need);
      for (let i = 0; i < need; i++) {
        const c = contactByIdRank[top[i] % contactCount];
        list[i] = lowerBound(entryContact, from, to, c) - from;
      }
      lists.push(list);
      topCount[s * TOP_MODES + m] = n;
      filled += need;
      topStart[s * TOP_MODES + m + 1] = filled;
    }
  }
  const topOffsets = contactColumn(contactCount, filled);
  let at = 0;
  for (const list of lists) {
    topOffsets.set(list, at);
    at += list.length;
  }
  return { topSlot, topStart, topCount, topOffsets, topBits };
}

/**
 * The list offsets of top lists stored as whole entry positions (the layout before topOffsets),
 * into `out` (as long as `entries`); false when the lists disagree with the entries: see
 * topOffsetsFit. A loader converts such a snapshot with it, so it keeps loading.
 */
export function offsetsOfEntries(
  x: { entryStart: Uint32Array; topSlot: Int32Array; topStart: Uint32Array; topCount: Uint32Array },
  entries: Uint32Array,
  out: ContactColumn,
): boolean {
  return eachListEntry(x, entries.length, (p, from, to) => {
    const e = entries[p];
    if (e < from || e >= to) return false;
    out[p] = e - from;
    return true;
  });
}

/**
 * Whether stored top lists have their shape: one slot number a listed token, the slots' lists
 * starting at 0 and running up to the offsets' end, never down, and every offset below its
 * token's entry count (a query reads them without checks).
 */
export function topOffsetsFit(
  x: { entryStart: Uint32Array; topSlot: Int32Array; topStart: Uint32Array; topCount: Uint32Array },
  offsets: ContactColumn,
): boolean {
  return eachListEntry(x, offsets.length, (p, from, to) => offsets[p] < to - from);
}

/** Calls `check(p, from, to)` for every list position p, with its token's entries [from, to); false when the lists' shape or a check fails. */
function eachListEntry(
  x: { entryStart: Uint32Array; topSlot: Int32Array; topStart: Uint32Array; topCount: Uint32Array },
  length: number,
  check: (p: number, from: number, to: number) => boolean,
): boolean {
  const { entryStart, topSlot, topStart } = x;
  const slots = x.topCount.length / TOP_MODES;
  const keys = entryStart.length - 1;
  if (!Number.isInteger(slots) || topSlot.length !== keys || topStart.length !== slots * TOP_MODES + 1) return false;
  if (topStart[0] !== 0 || topStart[slots * TOP_MODES] !== length) return false;
  const tokenOf = new Int32Array(slots).fill(-1);
  for (let t = 0; t < keys; t++) {
    const s = topSlot[t];
    if (s < 0) continue;
    if (s >= slots || tokenOf[s] >= 0) return false;
    tokenOf[s] = t;
  }
  for (let s = 0; s < slots; s++) {
    const t = tokenOf[s];
    if (t < 0) return false;
    const from = entryStart[t],
      to = entryStart[t + 1];
    for (let l = s * TOP_MODES; l < (s + 1) * TOP_MODES; l++) {
      if (topStart[l + 1] < topStart[l]) return false;
      for (let p = topStart[l]; p < topStart[l + 1]; p++) if (!check(p, from, to)) return false;
    }
  }
  return true;
}
