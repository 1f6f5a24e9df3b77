import type { OrgIndex } from '../index/org-index.js';
import { BOTH, bitmapWords, newestOf, OUTBOUND, TOP_MODES } from '../index/layout.js';
import { nextGeneration, type Scratch } from './scratch.js';
import type { TermView } from './term-view.js';

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * The page of a query whose every term is a plain token with a top list (see index/top-lists.ts)
 * and that has no date or channel filter: the exact count from the tokens' contact bitmaps (OR for
 * `any`, AND for `all`), and the page's contacts from a merge of the tokens' top lists in answer
 * order, into s.touched[0 .. min(count, offset + limit)). Nothing is read per entry of a token.
 *
 * Returns the count, or -1 when the lists cannot answer: a term without a list, or a page that
 * reaches past a shortened list (a contact beyond it could come first); the scan answers then.
 * The merge is exact because it takes keys in ascending order and stops before any shortened list
 * runs out: the first time a contact shows up is at its smallest key over the terms.
 */
export function topPage(
  index: OrgIndex,
  views: TermView[],
  all: boolean,
  direction: number,
  offset: number,
  limit: number,
  s: Scratch,
): number {
  const k = views.length;
  const { topSlot, topStart, topCount, topOffsets, entryStart, entryContact } = index;
  const { pos, end, heads } = s;
  for (let j = 0; j < k; j++) {
    const t = views[j].token;
    const slot = t < 0 ? -1 : topSlot[t];
    if (slot < 0) return -1;
    pos[j] = slot; // the slot, for now
  }
  let count = 0;
  if (k === 1) count = topCount[pos[0] * TOP_MODES + direction];
  else count = combineBits(index, k, all, direction, s);
  const need = Math.min(count, offset + limit);
  if (need <= offset) return count;

  // merge: per term its list's cursor, end and head key; a shortened list must not run out
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  let shortened = 0; // bit j: list j is shorter than its token's matching contacts
  for (let j = 0; j < k; j++) {
    const list = pos[j] * TOP_MODES + direction;
    pos[j] = topStart[list];
    end[j] = topStart[list + 1];
    if (end[j] - pos[j] < topCount[list]) shortened |= 1 << j;
    const first = entryStart[views[j].token];
    heads[j] = pos[j] < end[j] ? keyOf(index, direction, first + topOffsets[pos[j]], idRank, contactCount) : Infinity;
  }
  const stamp = s.contactStamp;
  const gen = s.generation;
  const bits = s.bits;
  let n = 0;
  while (n < need) {
    let best = -1;
    let bestKey = Infinity;
    for (let j = 0; j < k; j++) {
      if (pos[j] === end[j]) {
        if ((shortened >>> j) & 1) {
          nextGeneration(s); // the scan that answers instead must not see these stamps
          return -1;
        }
        continue;
      }
      if (heads[j] < bestKey) {
        bestKey = heads[j];
        best = j;
      }
    }
    if (best < 0) break;
    // (a list holds its token's entries as offsets from its first)
    const first = entryStart[views[best].token];
    const e = first + topOffsets[pos[best]];
    const c = entryContact[e];
    const p = ++pos[best];
    heads[best] = p < end[best] ? keyOf(index, direction, first + topOffsets[p], idRank, contactCount) : Infinity;
    if (stamp[c] === gen) continue;
    stamp[c] = gen;
    if (all && k > 1 && ((bits[c >>> 5] >>> (c & 31)) & 1) === 0) continue;
    s.pageEntry[n] = e;
    s.pageTerm[n] = best;
    s.touched[n++] = c;
  }
  if (n < need) {
    nextGeneration(s);
    return -1; // cannot happen with whole lists; the scan is the safe answer anyway
  }
  return count;
}

/**
 * The contacts matching every (all) or any term as one bitmap into s.bits, from the tokens'
 * bitmaps of the direction (slots in s.pos); returns how many. One sequential pass a term over
 * the words: a pass a word over the terms, testing the direction each time, took half as long
 * again for two terms (50 -> 43 µs for a whole 2-term page at 20k contacts).
 */
function combineBits(index: OrgIndex, k: number, all: boolean, direction: number, s: Scratch): number {
  const { topBits } = index;
  const words = bitmapWords(index.contactCount);
  const { bits, pos } = s;
  // inbound bits of slot t at 2 * t * words, outbound right after them
  const shift = direction === OUTBOUND ? words : 0;
  const both = direction === BOTH;
  if (k <= 3) {
    // Two or three terms (the commonest queries): one pass over the words that combines and
    // counts, instead of a pass a term and one to count (3 terms any: 52-54 -> 49.5-49.8 µs a
    // whole request). For two terms the second bitmap is read twice: x | x = x and x & x = x.
    const a0 = 2 * pos[0] * words + shift,
      a1 = 2 * pos[1] * words + shift,
      a2 = k === 3 ? 2 * pos[2] * words + shift : a1;
    let count = 0;
    if (both) {
      // a contact counts for a term when it has either direction's bit (outbound right after)
      const o0 = a0 + words,
        o1 = a1 + words,
        o2 = a2 + words;
      for (let w = 0; w < words; w++) {
        const x0 = topBits[a0 + w] | topBits[o0 + w],
          x1 = topBits[a1 + w] | topBits[o1 + w],
          x2 = topBits[a2 + w] | topBits[o2 + w];
        const x = all ? x0 & x1 & x2 : x0 | x1 | x2;
        bits[w] = x;
        count += popcount(x);
      }
    } else if (all)
      for (let w = 0; w < words; w++) {
        const x = topBits[a0 + w] & topBits[a1 + w] & topBits[a2 + w];
        bits[w] = x;
        count += popcount(x);
      }
    else
      for (let w = 0; w < words; w++) {
        const x = topBits[a0 + w] | topBits[a1 + w] | topBits[a2 + w];
        bits[w] = x;
        count += popcount(x);
      }
    return count;
  }
  for (let j = 0; j < k; j++) {
    const a = 2 * pos[j] * words + shift;
    const o = a + words; // the slot's outbound bits, read for both directions
    if (!both) {
      if (j === 0) for (let w = 0; w < words; w++) bits[w] = topBits[a + w];
      else if (all) for (let w = 0; w < words; w++) bits[w] &= topBits[a + w];
      else for (let w = 0; w < words; w++) bits[w] |= topBits[a + w];
    } else if (j === 0) for (let w = 0; w < words; w++) bits[w] = topBits[a + w] | topBits[o + w];
    else if (all) for (let w = 0; w < words; w++) bits[w] &= topBits[a + w] | topBits[o + w];
    else for (let w = 0; w < words; w++) bits[w] |= topBits[a + w] | topBits[o + w];
  }
  let count = 0;
  for (let w = 0; w < words; w++) count += popcount(bits[w]);
  return count;
}

/** The answer's sort key of entry e (as matchContacts makes it): newest time rank, then id rank. */
function keyOf(index: OrgIndex, direction: number, e: number, idRank: Uint32Array, contactCount: number): number {
  // an entry of a direction's top list has a message of that direction, so the rank is >= 0
  return newestOf(index, e, direction) * contactCount + idRank[index.entryContact[e]];
}
