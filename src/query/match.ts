/**
 * Which contacts match a query, and the sort key of each (the newest counting message's time rank,
 * then the contact's id rank): one term's entries or several terms' entries walked in sequence,
 * deciding each contact from its newest counting posting, most often without reading the rest.
 */
import {
  HEAD_INLINE,
  INBOUND,
  INBOUND_COMBOS,
  newestOf,
  newestOutbound,
  OUT_FAR,
  OUT_SHIFT,
  OUT_UNTIED,
  OUTBOUND,
  rankOf,
} from '../index/layout.js';
import { channelWords } from '../index/channel-bits.js';
import { postingsLowerBound } from '../index/lower-bound.js';
import { postStartIn } from '../index/post-starts.js';
import type { Plan } from './plan.js';
import type { Scratch } from './scratch.js';
import { holdsPhrase, type TermView } from './term-view.js';

/**
 * Newest message of phrase view position e that passes the filters and contains the phrase, or
 * -1; only messages of a time rank below `hi` (plan.hi, or lower: matchSeveral's bound) count.
 */
function newestCounting(plan: Plan, v: TermView, e: number, hi: number): number {
  const { index } = plan;
  const g = v.entry === null ? e : v.entry[e];
  const f = index.entryFlags[g];
  if ((f & plan.mask) === 0) return -1;
  // inbound (the default): an entry whose newest inbound message is older than the date window
  // has none in it, decided without reading its postings (a quarter of a common word's entries)
  const { msgCombo, storedPostings: postings, entryNewestIn: words } = index;
  if (plan.direction === INBOUND && (words[g] & plan.rankField) >= hi) return -1;
  if ((f & HEAD_INLINE) !== 0) {
    // the inline head is the entry's newest message
    const o = words[g] & plan.headField;
    if (o >= hi) return -1;
    if (o >= plan.lo && ((1 << msgCombo[o]) & plan.mask) !== 0 && (v.phrase === null || holdsPhrase(plan, v, e, o)))
      return o;
  }
  const { entryPostBase: bases, entryPostFar: far } = index;
  const end = postStartIn(bases, words, far, plan.postShift, g + 1);
  let p = postStartIn(bases, words, far, plan.postShift, g);
  if (plan.lo > 0) p = postingsLowerBound(postings, p, end, plan.lo);
  for (; p < end; p++) {
    const o = postings[p];
    if (o >= hi) return -1;
    if (((1 << msgCombo[o]) & plan.mask) !== 0 && (v.phrase === null || holdsPhrase(plan, v, e, o))) return o;
  }
  return -1;
}

/**
 * Time rank of the newest counting message of view position e, or -1. Never the index's NONE
 * (0xffffffff): a value outside the small-integer range returned from a function that is not
 * inlined is boxed, one heap number per call (measured: 13 KB of garbage a request).
 */
function newestRank(plan: Plan, v: TermView, e: number, hi: number): number {
  if (v.entry === null && v.phrase === null) {
    // a plain token: without date or channel filter the precomputed newest (of a direction)
    return plan.precomputed ? newestOf(plan.index, e, plan.direction) : newestFiltered(plan, e);
  }
  const o = newestCounting(plan, v, e, hi);
  return o < 0 ? -1 : rankOf(plan.index, o, plan.index.msgCombo[o]);
}

/**
 * Time rank of plain entry e's newest message that passes a channel or date filter, or -1. The
 * combo mask rejects most entries from the flags; of the rest, the inbound newest column settles
 * many without reading postings (matchFiltered repeats these tests in its loop, hoisted).
 */
function newestFiltered(plan: Plan, e: number): number {
  const { index, mask } = plan;
  const f = index.entryFlags[e];
  if ((f & mask) === 0) return -1;
  if (plan.direction === INBOUND) {
    const r = index.entryNewestIn[e] & plan.rankField;
    // no inbound message in the window or before it: none in it (noInbound is above every hi)
    if (r >= plan.hi) return -1;
    // the newest inbound message is in the window (its rank is, so its ordinal is), and every
    // inbound channel of the entry passes the filter: it is the answer, no posting read
    if (r >= plan.lo && (f & INBOUND_COMBOS & ~mask) === 0) return r;
  }
  return scanFiltered(plan, e);
}

/** newestFiltered's scan of entry e's messages in the date window, for the first passing channel. */
function scanFiltered(plan: Plan, e: number): number {
  const { index, mask, lo, hi } = plan;
  if ((index.entryFlags[e] & HEAD_INLINE) !== 0) {
    // the inline head is the entry's newest message
    const o = index.entryNewestIn[e] & plan.headField;
    if (o >= hi) return -1;
    const combo = index.msgCombo[o];
    if (o >= lo && ((1 << combo) & mask) !== 0) return rankOf(index, o, combo);
  }
  return scanStored(plan, e);
}

/** scanFiltered over entry e's stored postings only (its inline head, if any, known not to count). */
function scanStored(plan: Plan, e: number): number {
  const { index, mask, lo, hi } = plan;
  const { storedPostings: postings, msgCombo, entryPostBase: bases, entryNewestIn: words, entryPostFar: far } = index;
  const end = postStartIn(bases, words, far, plan.postShift, e + 1);
  let p = postStartIn(bases, words, far, plan.postShift, e);
  // nothing stored, or every message newer than the window: one read, no scan
  if (p === end || postings[end - 1] < lo) return -1;
  if (lo > 0) p = postingsLowerBound(postings, p, end, lo);
  for (; p < end; p++) {
    const o = postings[p];
    if (o >= hi) return -1;
    const combo = msgCombo[o];
    if (((1 << combo) & mask) !== 0) return rankOf(index, o, combo);
  }
  return -1;
}

/**
 * Keys of every matching contact into s.keys; returns how many (the exact `count`). A key sorts
 * like the answer: time rank of the newest counting message, then the contact's id rank.
 */
export function matchContacts(plan: Plan, s: Scratch): number {
  const { views, index } = plan;
  const keys = s.keys;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  let n = 0;
  if (views.length === 1) {
    const v = views[0];
    if (plan.precomputed && v.entry === null && v.phrase === null) {
      // The commonest query, one plain token and no filter but the direction (inbound by
      // default): two sequential reads an entry, with newestRank's tests hoisted out of a loop
      // that may run over every contact.
      const contact = v.contact;
      const direction = plan.direction;
      if (direction === INBOUND) {
        const newestIn = index.entryNewestIn;
        const field = plan.rankField;
        const none = plan.headField + 1;
        for (let e = v.from; e < v.to; e++) {
          const r = newestIn[e] & field;
          if (r < none) keys[n++] = r * contactCount + idRank[contact[e]];
        }
        return n;
      }
      if (direction === OUTBOUND) {
        // most entries: the newest outbound is one of the entry's first postings, its own time rank
        const { entryFlags: flags, storedPostings: postings, entryPostBase: bases, entryNewestIn: words } = index;
        const { entryPostFar: far } = index;
        const { postShift: shift, headField } = plan;
        for (let e = v.from; e < v.to; e++) {
          const f = flags[e];
          const code = (f >>> OUT_SHIFT) & OUT_FAR;
          if (code === 0) continue;
          // message (code - 1) of the entry: the inline head for code 1 (an entry without inbound
          // messages), else a stored posting, the head not being stored when inline
          const inline = (f & HEAD_INLINE) !== 0;
          const r =
            code === OUT_FAR || (f & OUT_UNTIED) === 0
              ? newestOutbound(index, e)
              : code === 1 && inline
                ? words[e] & headField
                : postings[postStartIn(bases, words, far, shift, e) + code - 1 - (inline ? 1 : 0)];
          if (r >= 0) keys[n++] = r * contactCount + idRank[contact[e]];
        }
        return n;
      }
      for (let e = v.from; e < v.to; e++) {
        const r = newestOf(index, e, direction);
        if (r >= 0) keys[n++] = r * contactCount + idRank[contact[e]];
      }
      return n;
    }
    if (v.entry === null && v.phrase === null) return matchFiltered(plan, v, s);
    for (let e = v.from; e < v.to; e++) {
      const r = newestRank(plan, v, e, plan.hi);
      if (r >= 0) keys[n++] = r * contactCount + idRank[v.contact[e]];
    }
    return n;
  }
  return matchSeveral(plan, s);
}

/**
 * matchContacts for one plain token under a channel or date filter: newestFiltered with its
 * tests hoisted into the loop, so that the entries the flags or the newest inbound settle cost a
 * few sequential reads (measured on the channel + date class: this walk went from 43 to 25 µs; the
 * flags read two entries at a time took the class from 66.8 to 63.8 µs). A frequent token under
 * one channel, inbound, visits only its entries with such a message (matchChannel).
 */
function matchFiltered(plan: Plan, v: TermView, s: Scratch): number {
  const { index, mask } = plan;
  const slot = index.topSlot[v.token];
  if (slot >= 0 && plan.direction === INBOUND && mask !== 0 && (mask & (mask - 1)) === 0)
    return matchChannel(
      plan,
      v,
      s,
      index.inboundChannelStart[slot] + (31 - Math.clz32(mask)) * channelWords(v.to - v.from),
    );
  const { lo, hi } = plan;
  const { entryFlags: flags, entryNewestIn: newestIn, msgCombo } = index;
  const keys = s.keys;
  const contact = v.contact;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  const inboundOnly = plan.direction === INBOUND;
  const inboundOut = INBOUND_COMBOS & ~mask;
  const field = plan.rankField;
  let n = 0;
  // most entries lack the filter's combos (81% of a common word's under one channel): an even
  // entry reads its pair's flags as one word (s.flagPairs), and a pair without them is passed over
  const pairs = s.flagPairs;
  const both = mask | (mask << 16);
  const last = v.to - 1;
  for (let e = v.from; e < v.to; e++) {
    if (pairs !== null && (e & 1) === 0 && e < last && (pairs[e >>> 1] & both) === 0) {
      e++;
      continue;
    }
    const f = flags[e];
    if ((f & mask) === 0) continue;
    let r: number;
    if (inboundOnly) {
      // An inline head here is the newest inbound message, r itself (an entry without inbound
      // messages has r >= hi): newer than the window, it cannot count; in it, it counts when its
      // channel passes, with no posting read. (Inline, as in matchChannel: a function for these
      // tests took a date-only filter from 98-104 to 109-110 µs.)
      r = newestIn[e] & field;
      if (r >= hi) continue;
      // (one call site, so that one inlined copy of scanStored serves both cases)
      if (r < lo || ((f & inboundOut) !== 0 && ((f & HEAD_INLINE) === 0 || ((1 << msgCombo[r]) & mask) === 0)))
        r = scanStored(plan, e);
    } else r = scanFiltered(plan, e);
    if (r >= 0) keys[n++] = r * contactCount + idRank[contact[e]];
  }
  return n;
}

/**
 * matchFiltered over the entries whose bit is set in the channel bitmap at `bits` (channel-bits.ts):
 * the entries with an inbound message on the filter's one channel, 32 a word read, lowest first.
 */
function matchChannel(plan: Plan, v: TermView, s: Scratch, bits: number): number {
  const { index, mask, lo, hi } = plan;
  const { entryFlags: flags, inboundChannelBits: words, entryNewestIn: newestIn, msgCombo } = index;
  const inboundOut = INBOUND_COMBOS & ~mask;
  const keys = s.keys;
  const contact = v.contact;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  const field = plan.rankField;
  let n = 0;
  for (let base = v.from, end = bits + channelWords(v.to - v.from); bits < end; bits++, base += 32) {
    let b = words[bits];
    while (b !== 0) {
      const low = b & -b;
      b ^= low;
      const e = base + 31 - Math.clz32(low);
      // matchFiltered's tests of an inbound-only filter (its flags test is the bit itself)
      const f = flags[e];
      let r = newestIn[e] & field;
      if (r >= hi) continue;
      // (one call site, so that one inlined copy of scanStored serves both cases)
      if (r < lo || ((f & inboundOut) !== 0 && ((f & HEAD_INLINE) === 0 || ((1 << msgCombo[r]) & mask) === 0)))
        r = scanStored(plan, e);
      if (r >= 0) keys[n++] = r * contactCount + idRank[contact[e]];
    }
  }
  return n;
}

/**
 * matchContacts for several terms: each view walked on its own (sequential reads), the newest
 * rank and the number of terms passed kept per contact ordinal. Under `all`, views go from the
 * smallest and a contact that failed an earlier one is skipped before any of its postings is read.
 * Under `any`, plain tokens go first and phrases last, and a phrase looks at a contact already
 * matched only for a message newer than the one it has: the rest cannot change the contact's key
 * (a time rank is never below its ordinal's tie group start, so no message at or past that rank
 * is newer). `keywords=de,o o o` checked every candidate of the phrase, 14 ms at 1M messages.
 */
function matchSeveral(plan: Plan, s: Scratch): number {
  const { views, index, all } = plan;
  const keys = s.keys;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  let n = 0;
  const gen = s.generation;
  const { contactStamp: stamp, contactBest: best, contactHits: hits, touched } = s;
  const order = all ? [...views].sort((a, b) => a.to - a.from - (b.to - b.from)) : plainFirst(views);
  const k = order.length;
  // a plain token without date or channel filter reads its rank from the precomputed columns
  const direction = plan.direction;
  let t = 0;
  for (let j = 0; j < k; j++) {
    const v = order[j];
    const contact = v.contact;
    const plain = plan.precomputed && v.entry === null && v.phrase === null;
    for (let e = v.from; e < v.to; e++) {
      const c = contact[e];
      const seen = stamp[c] === gen;
      if (all && j > 0 && (!seen || hits[c] !== j)) continue;
      let r: number;
      if (plain) {
        r = newestOf(index, e, direction);
        if (r < 0) continue;
      } else {
        r = newestRank(plan, v, e, !all && seen ? best[c] : plan.hi);
        if (r < 0) continue;
      }
      if (!seen) {
        stamp[c] = gen;
        best[c] = r;
        hits[c] = 1;
        touched[t++] = c;
      } else {
        if (r < best[c]) best[c] = r;
        hits[c]++;
      }
    }
  }
  for (let i = 0; i < t; i++) {
    const c = touched[i];
    if (!all || hits[c] === k) keys[n++] = best[c] * contactCount + idRank[c];
  }
  return n;
}

/** `views` with its plain tokens before its phrases: itself when they already are (no garbage). */
function plainFirst(views: TermView[]): TermView[] {
  let phrase = false;
  for (const v of views) {
    if (v.phrase !== null) phrase = true;
    else if (phrase) return [...views].sort((a, b) => (a.phrase === null ? 0 : 1) - (b.phrase === null ? 0 : 1));
  }
  return views;
}
