import {
  BOTH,
  CHANNEL_COUNT,
  INBOUND,
  INBOUND_COMBOS,
  NONE,
  newestOf,
  newestOutbound,
  OUT_FAR,
  OUT_SHIFT,
  OUT_UNTIED,
  OUTBOUND,
  timeRank,
} from '../index/layout.js';
import { lowerBound, postingsLowerBound } from '../index/lower-bound.js';
import { summaryAt } from '../index/entry-summaries.js';
import { postStart } from '../index/post-starts.js';
import type { OrgIndex } from '../index/org-index.js';
import { smallestKeys } from '../index/select.js';
import { CHANNELS } from '../model/records.js';
import { filterMask } from './filter-mask.js';
import { scratchFor, type Scratch, type TextViews } from './scratch.js';
import { bodyWriter, utf8, type BodyWriter, type Piece } from './body-writer.js';
import type { SearchRequest, SearchResponse } from '../request/search-request.js';
import { topPage } from './top-page.js';
import { containsPhrase, termView, type TermView } from './term-view.js';

/** First ordinal whose sent_at is below `ms` (`strict`) or at most `ms`; sent_at is non-increasing. */
function firstOrdinal(sentAt: Float64Array, ms: number, strict: boolean): number {
  let lo = 0,
    hi = sentAt.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? sentAt[mid] >= ms : sentAt[mid] > ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The query's fixed inputs for one execution. */
interface Plan {
  index: OrgIndex;
  views: TermView[];
  all: boolean;
  mask: number;
  /** ordinal window of the date filter: [lo, hi) */
  lo: number;
  hi: number;
  /** INBOUND, OUTBOUND or BOTH (index/layout.ts) */
  direction: number;
  /** no date and no channel filter: the per-entry newest ranks answer matchContacts */
  precomputed: boolean;
}

/** Newest message of phrase view position e that passes the filters and contains the phrase, or -1. */
function newestCounting(plan: Plan, v: TermView, e: number): number {
  const { index } = plan;
  const g = v.entry === null ? e : v.entry[e];
  if ((index.entryFlags[g] & plan.mask) === 0) return -1;
  // inbound (the default): an entry whose newest inbound message is older than the date window
  // has none in it, decided without reading its postings (a quarter of a common word's entries)
  if (plan.direction === INBOUND && index.entryNewestIn[g] >= plan.hi) return -1;
  const { msgCombo, postings } = index;
  const end = postStart(index, g + 1);
  let p = postStart(index, g);
  if (plan.lo > 0) p = postingsLowerBound(postings, p, end, plan.lo);
  for (; p < end; p++) {
    const o = postings[p];
    if (o >= plan.hi) return -1;
    if (((1 << msgCombo[o]) & plan.mask) !== 0 && (v.phrase === null || containsPhrase(index, o, v.phrase))) return o;
  }
  return -1;
}

/**
 * Time rank of the newest counting message of view position e, or -1. Never the index's NONE
 * (0xffffffff): a value outside the small-integer range returned from a function that is not
 * inlined is boxed, one heap number per call (measured: 13 KB of garbage a request).
 */
function newestRank(plan: Plan, v: TermView, e: number): number {
  if (v.entry === null && v.phrase === null) {
    // a plain token: without date or channel filter the precomputed newest (of a direction)
    return plan.precomputed ? newestOf(plan.index, e, plan.direction) : newestFiltered(plan, e);
  }
  const o = newestCounting(plan, v, e);
  return o < 0 ? -1 : timeRank(plan.index.msgSentAt, o);
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
    const r = index.entryNewestIn[e];
    // no inbound message in the window or before it: none in it (NONE is above every hi)
    if (r >= plan.hi) return -1;
    // the newest inbound message is in the window (its rank is, so its ordinal is), and every
    // inbound channel of the entry passes the filter: it is the answer, no posting read
    if (r >= plan.lo && (f & INBOUND_COMBOS & ~mask) === 0) return r;
  }
  return scanFiltered(plan, e);
}

/** newestFiltered's scan of entry e's postings in the date window, for the first passing channel. */
function scanFiltered(plan: Plan, e: number): number {
  const { index, mask, lo, hi } = plan;
  const { postings, msgCombo } = index;
  const end = postStart(index, e + 1);
  // every message newer than the window: one read, no scan
  if (postings[end - 1] < lo) return -1;
  let p = postStart(index, e);
  if (lo > 0) p = postingsLowerBound(postings, p, end, lo);
  for (; p < end; p++) {
    const o = postings[p];
    if (o >= hi) return -1;
    if (((1 << msgCombo[o]) & mask) !== 0) return timeRank(index.msgSentAt, o);
  }
  return -1;
}

/**
 * Keys of every matching contact into s.keys; returns how many (the exact `count`). A key sorts
 * like the answer: time rank of the newest counting message, then the contact's id rank.
 */
function matchContacts(plan: Plan, s: Scratch): number {
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
        for (let e = v.from; e < v.to; e++) {
          const r = newestIn[e];
          if (r !== NONE) keys[n++] = r * contactCount + idRank[contact[e]];
        }
        return n;
      }
      if (direction === OUTBOUND) {
        // most entries: the newest outbound is one of the entry's first postings, its own time rank
        const { entryFlags: flags, postings } = index;
        for (let e = v.from; e < v.to; e++) {
          const f = flags[e];
          const code = (f >>> OUT_SHIFT) & OUT_FAR;
          if (code === 0) continue;
          const r =
            code !== OUT_FAR && (f & OUT_UNTIED) !== 0
              ? postings[postStart(index, e) + code - 1]
              : newestOutbound(index, e);
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
      const r = newestRank(plan, v, e);
      if (r >= 0) keys[n++] = r * contactCount + idRank[v.contact[e]];
    }
    return n;
  }
  return matchSeveral(plan, s);
}

/**
 * matchContacts for one plain token under a channel or date filter: newestFiltered with its
 * tests hoisted into the loop, so that the entries the flags or the newest inbound settle cost a
 * few sequential reads (measured on the channel + date class: this walk went from 43 to 25 µs).
 */
function matchFiltered(plan: Plan, v: TermView, s: Scratch): number {
  const { index, mask, lo, hi } = plan;
  const { entryFlags: flags, entryNewestIn: newestIn } = index;
  const keys = s.keys;
  const contact = v.contact;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  const inboundOnly = plan.direction === INBOUND;
  const inboundOut = INBOUND_COMBOS & ~mask;
  let n = 0;
  for (let e = v.from; e < v.to; e++) {
    const f = flags[e];
    if ((f & mask) === 0) continue;
    let r: number;
    if (inboundOnly) {
      r = newestIn[e];
      if (r >= hi) continue;
      if (r < lo || (f & inboundOut) !== 0) r = scanFiltered(plan, e);
    } else r = scanFiltered(plan, e);
    if (r >= 0) keys[n++] = r * contactCount + idRank[contact[e]];
  }
  return n;
}

/**
 * matchContacts for several terms: each view walked on its own (sequential reads), the newest
 * rank and the number of terms passed kept per contact ordinal. Under `all`, views go from the
 * smallest and a contact that failed an earlier one is skipped before any of its postings is read.
 */
function matchSeveral(plan: Plan, s: Scratch): number {
  const { views, index, all } = plan;
  const keys = s.keys;
  const contactCount = index.contactCount;
  const idRank = index.contactIdRank;
  let n = 0;
  const gen = s.generation;
  const { contactStamp: stamp, contactBest: best, contactHits: hits, touched } = s;
  const order = all ? [...views].sort((a, b) => a.to - a.from - (b.to - b.from)) : views;
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
        r = newestRank(plan, v, e);
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

/** Position of contact c in a view, or -1. */
function positionOf(v: TermView, c: number): number {
  const e = lowerBound(v.contact, v.from, v.to, c);
  return e < v.to && v.contact[e] === c ? e : -1;
}

// ---- the body's fixed pieces (spec 2.2-2.5, full forms, key order of the spec) ----
const DATA_OPEN = utf8('{"data":[');
const ITEM_OPEN = utf8('{"contact":');
const NEXT_ITEM_OPEN = utf8(',{"contact":');
const MATCH_COUNT = utf8(',"match_count":');
const CONVERSATIONS_COUNT = utf8(',"conversations_count":');
const FIRST_MATCHED = utf8(',"first_matched_at":"');
const LAST_MATCHED = utf8('","last_matched_at":"');
const MESSAGES_OPEN = utf8('","messages":[');
const ITEM_CLOSE = utf8(']}');
const MESSAGE_OPEN = utf8('{"id":"');
const NEXT_MESSAGE_OPEN = utf8(',{"id":"');
const CONVERSATION = utf8('","conversation_id":"');
/** per combo (direction * CHANNEL_COUNT + channel): the channel and direction fields and the opening of content */
const COMBO = Array.from({ length: 2 * CHANNEL_COUNT }, (_, combo) =>
  utf8(
    `","channel":"${CHANNELS[combo % CHANNEL_COUNT]}","direction":"${combo < CHANNEL_COUNT ? 'inbound' : 'outbound'}","content":"`,
  ),
);
const SENT_AT = utf8('","sent_at":"');
const MESSAGE_CLOSE = utf8('"}');
const PAGINATION = utf8('],"pagination":{"limit":');
const OFFSET = utf8(',"offset":');
const COUNT = utf8(',"count":');
const HAS_MORE_TRUE = utf8(',"has_more":true,"next_offset":');
const HAS_MORE_FALSE = utf8(',"has_more":false,"next_offset":null');
/** the `query` object (spec 2.5): its fixed pieces by value, so no object, Date or stringify a request */
const QUERY_ORG = utf8('},"query":{"organization_id":"');
const QUERY_TERMS = utf8('","terms":');
const QUERY_MATCH = { any: utf8(',"match":"any","direction":"'), all: utf8(',"match":"all","direction":"') };
const QUERY_DIRECTION = {
  inbound: utf8('inbound","channel":'),
  outbound: utf8('outbound","channel":'),
  all: utf8('all","channel":'),
};
const QUERY_CHANNEL = new Map<string | null, Piece>([
  [null, utf8('null,"from":')],
  ...CHANNELS.map((c): [string, Piece] => [c, utf8(`"${c}","from":`)]),
]);
const NULL = utf8('null');
const QUOTE = utf8('"');
const QUERY_TO = utf8(',"to":');
const BODY_CLOSE = utf8('}}');
/** bound on an item's or message's bytes besides its strings (keys, numbers, timestamps) */
const ITEM_FIXED = 320;
const MESSAGE_FIXED = 200;

/** Ordinals of the contact's counting messages: count, conversations, newest, oldest, and the first few. */
interface Walk {
  count: number;
  conversations: number;
  newest: number;
  oldest: number;
  picked: number;
}

/** Records counting message o (newest first) into the walk. */
function counted(index: OrgIndex, s: Scratch, w: Walk, o: number, messagesLimit: number): void {
  w.count++;
  if (w.newest < 0) w.newest = o;
  w.oldest = o;
  const conv = index.msgConversation[o];
  if (s.conversationStamp[conv] !== s.generation) {
    s.conversationStamp[conv] = s.generation;
    w.conversations++;
  }
  if (w.picked < messagesLimit) s.picked[w.picked++] = o;
}

/**
 * Walks one matching contact's counting messages, newest first: a merge over every term. `entry`,
 * when >= 0, is the contact's entry of term `term` (a top-list page knows it): no search for it.
 */
function walkContact(
  plan: Plan,
  s: Scratch,
  c: number,
  messagesLimit: number,
  w: Walk,
  entry: number,
  term: number,
): void {
  const { index, views } = plan;
  const k = views.length;
  const { postings, msgCombo } = index;
  const { mask, hi } = plan;
  w.count = w.conversations = w.picked = 0;
  w.newest = w.oldest = -1;
  if (k === 1) {
    // one term: its list for this contact, no merge (a top-list page knows the entry already)
    const v = views[0];
    const e = entry >= 0 ? entry : positionOf(v, c);
    const g = v.entry === null ? e : v.entry[e];
    const end = postStart(index, g + 1);
    const start = postStart(index, g);
    const phrase = v.phrase;
    if (plan.precomputed && v.entry === null && phrase === null && end - start >= index.summaryMin[0]) {
      const at = summaryAt(index, g);
      if (at >= 0) {
        walkSummarized(plan, s, start, end, messagesLimit, w, at);
        return;
      }
    }
    let p = plan.lo > 0 ? postingsLowerBound(postings, start, end, plan.lo) : start;
    for (; p < end; p++) {
      const o = postings[p];
      if (o >= hi) break;
      if (((1 << msgCombo[o]) & mask) === 0 || (phrase !== null && !containsPhrase(index, o, phrase))) continue;
      counted(index, s, w, o, messagesLimit);
    }
    return;
  }
  if (k >= UNION_BY_SORT) {
    walkBySort(plan, s, c, messagesLimit, w, entry, term);
    return;
  }
  const { pos, end } = s;
  for (let j = 0; j < k; j++) {
    const v = views[j];
    const e = j === term && entry >= 0 && v.entry === null ? entry : positionOf(v, c);
    if (e < 0) {
      pos[j] = end[j] = 0;
      continue;
    }
    const g = v.entry === null ? e : v.entry[e];
    end[j] = postStart(index, g + 1);
    const start = postStart(index, g);
    pos[j] = plan.lo > 0 ? postingsLowerBound(postings, start, end[j], plan.lo) : start;
  }
  for (;;) {
    // next ordinal over the contact's lists of every term; a message counts once
    let o = NONE; // above every ordinal
    for (let j = 0; j < k; j++) if (pos[j] < end[j] && postings[pos[j]] < o) o = postings[pos[j]];
    if (o >= hi) break;
    const passes = ((1 << msgCombo[o]) & mask) !== 0;
    let matched = false;
    for (let j = 0; j < k; j++) {
      if (pos[j] >= end[j] || postings[pos[j]] !== o) continue;
      pos[j]++;
      const phrase = views[j].phrase;
      if (passes && !matched) matched = phrase === null || containsPhrase(index, o, phrase);
    }
    if (matched) counted(index, s, w, o, messagesLimit);
  }
}

/**
 * walkContact for one plain token without date or channel filter, on an entry with a summary
 * (entry-summaries.ts, values from `at`): the counts and the oldest come from it, and only the
 * postings up to the last picked message (or the newest, when none is picked) are read.
 */
function walkSummarized(
  plan: Plan,
  s: Scratch,
  start: number,
  end: number,
  messagesLimit: number,
  w: Walk,
  at: number,
): void {
  const { index, mask } = plan;
  const { postings, msgCombo, summaryValues } = index;
  const v = at + plan.direction * 3;
  w.count = summaryValues[v];
  w.conversations = summaryValues[v + 1];
  w.oldest = summaryValues[v + 2];
  for (let p = start; p < end; p++) {
    const o = postings[p];
    if (((1 << msgCombo[o]) & mask) === 0) continue;
    if (w.newest < 0) w.newest = o;
    if (w.picked >= messagesLimit) return;
    s.picked[w.picked++] = o;
  }
}

/** From this many terms on, a contact's lists are united by one sort, not a k-way merge. */
const UNION_BY_SORT = 3;
/** Up to this many gathered postings walkBySort sorts by insertion (see there). */
const INSERTION_SORT_MAX = 32;

/**
 * walkContact for many terms: (ordinal * 16 + term) of every list of the contact gathered and
 * sorted once (a native numeric sort), then read in groups of one ordinal: a few operations a
 * posting, where the k-way merge spent 2k a message (measured 60% of the 10-term largest page).
 */
function walkBySort(
  plan: Plan,
  s: Scratch,
  c: number,
  messagesLimit: number,
  w: Walk,
  entry: number,
  term: number,
): void {
  const { index, views, mask, hi } = plan;
  const { postings, msgCombo } = index;
  let n = 0;
  for (let j = 0; j < views.length; j++) {
    const v = views[j];
    const e = j === term && entry >= 0 && v.entry === null ? entry : positionOf(v, c);
    if (e < 0) continue;
    const g = v.entry === null ? e : v.entry[e];
    const end = postStart(index, g + 1);
    const start = postStart(index, g);
    let p = plan.lo > 0 ? postingsLowerBound(postings, start, end, plan.lo) : start;
    if (n + end - p > s.gather.length) {
      const grown = new Uint32Array(Math.max(2 * s.gather.length, n + end - p));
      grown.set(s.gather.subarray(0, n));
      s.gather = grown;
    }
    const gather = s.gather;
    for (; p < end; p++) {
      const o = postings[p];
      if (o >= hi) break;
      gather[n++] = o * 16 + j; // MAX_TERMS <= 16
    }
  }
  // a contact's few postings: an insertion sort in place; many: the native sort of a view (an
  // allocation a contact, garbage that a 3-term page of 50 contacts paid 50 times)
  const sorted = s.gather;
  if (n <= INSERTION_SORT_MAX) {
    for (let i = 1; i < n; i++) {
      const x = sorted[i];
      let j = i - 1;
      while (j >= 0 && sorted[j] > x) {
        sorted[j + 1] = sorted[j];
        j--;
      }
      sorted[j + 1] = x;
    }
  } else sorted.subarray(0, n).sort();
  for (let i = 0; i < n; ) {
    const o = sorted[i] >>> 4;
    const passes = ((1 << msgCombo[o]) & mask) !== 0;
    let matched = false;
    for (; i < n && sorted[i] >>> 4 === o; i++) {
      if (passes && !matched) {
        const phrase = views[sorted[i] & 15].phrase;
        matched = phrase === null || containsPhrase(index, o, phrase);
      }
    }
    if (matched) counted(index, s, w, o, messagesLimit);
  }
}

/** Writes one message object (spec 2.3, full form). */
function writeMessage(out: BodyWriter, index: OrgIndex, text: TextViews, o: number, first: boolean): void {
  const { msgIdOffsets, msgContentOffsets, conversationIdOffsets } = index;
  const conv = index.msgConversation[o];
  const idFrom = msgIdOffsets[o],
    idTo = msgIdOffsets[o + 1];
  const convFrom = conversationIdOffsets[conv],
    convTo = conversationIdOffsets[conv + 1];
  const textFrom = msgContentOffsets[o],
    textTo = msgContentOffsets[o + 1];
  out.reserve(MESSAGE_FIXED + (idTo - idFrom) + (convTo - convFrom) + (textTo - textFrom));
  out.raw(first ? MESSAGE_OPEN : NEXT_MESSAGE_OPEN);
  out.slice(text.msgId, idFrom, idTo);
  out.raw(CONVERSATION);
  out.slice(text.conversationId, convFrom, convTo);
  out.raw(COMBO[index.msgCombo[o]]);
  out.slice(text.content, textFrom, textTo);
  out.raw(SENT_AT);
  out.isoAt(index.msgSentAt, o);
  out.raw(MESSAGE_CLOSE);
}

/** Writes the result item of one matching contact (spec 2.2). */
function writeItem(
  out: BodyWriter,
  plan: Plan,
  s: Scratch,
  c: number,
  messagesLimit: number,
  first: boolean,
  entry = -1,
  term = 0,
): void {
  const { index } = plan;
  const w = s.walk;
  walkContact(plan, s, c, messagesLimit, w, entry, term);
  const from = index.contactJsonOffsets[c],
    to = index.contactJsonOffsets[c + 1];
  out.reserve(ITEM_FIXED + (to - from));
  out.raw(first ? ITEM_OPEN : NEXT_ITEM_OPEN);
  out.slice(s.text.contactJson, from, to);
  out.raw(MATCH_COUNT);
  out.uint(w.count);
  out.raw(CONVERSATIONS_COUNT);
  out.uint(w.conversations);
  out.raw(FIRST_MATCHED);
  out.isoAt(index.msgSentAt, w.oldest);
  out.raw(LAST_MATCHED);
  out.isoAt(index.msgSentAt, w.newest);
  out.raw(MESSAGES_OPEN);
  for (let i = 0; i < w.picked; i++) writeMessage(out, index, s.text, s.picked[i], i === 0);
  out.reserve(ITEM_CLOSE.length);
  out.raw(ITEM_CLOSE);
}

/** Closes `data` and writes `pagination` and `query`: the end of every 200 body. */
function writeTail(out: BodyWriter, req: SearchRequest, count: number, items: number): Uint8Array {
  const hasMore = req.offset + items < count;
  out.reserve(160);
  out.raw(PAGINATION);
  out.uint(req.limit);
  out.raw(OFFSET);
  out.uint(req.offset);
  out.raw(COUNT);
  out.uint(count);
  if (hasMore) {
    out.raw(HAS_MORE_TRUE);
    out.uint(req.offset + req.limit);
  } else {
    out.raw(HAS_MORE_FALSE);
  }
  writeQuery(out, req);
  return out.view();
}

/** The `query` object (spec 2.5) and the body's close. */
function writeQuery(out: BodyWriter, req: SearchRequest): void {
  // the organization id is a validated lower-case UUID: nothing in it to escape
  out.reserve(QUERY_ORG.length + req.organizationId.length + QUERY_TERMS.length);
  out.raw(QUERY_ORG);
  out.ascii(req.organizationId);
  out.raw(QUERY_TERMS);
  // terms are the user's text: JSON.stringify escapes them (a few short strings)
  out.text(JSON.stringify(req.terms));
  const channel = QUERY_CHANNEL.get(req.channel);
  if (channel === undefined) throw new Error(`query: unknown channel ${req.channel}`);
  out.reserve(200);
  out.raw(QUERY_MATCH[req.match]);
  out.raw(QUERY_DIRECTION[req.direction]);
  out.raw(channel);
  writeInstant(out, req.from);
  out.raw(QUERY_TO);
  writeInstant(out, req.to);
  out.raw(BODY_CLOSE);
}

/** null, or the instant as toISOString writes it, quoted (reserved by the caller). */
function writeInstant(out: BodyWriter, ms: number | null): void {
  if (ms === null) {
    out.raw(NULL);
    return;
  }
  out.raw(QUOTE);
  out.iso(ms);
  out.raw(QUOTE);
}

function emptyBody(req: SearchRequest, count: number): Uint8Array {
  const out = bodyWriter;
  out.reset();
  out.reserve(DATA_OPEN.length);
  out.raw(DATA_OPEN);
  return writeTail(out, req, count, 0);
}

/**
 * The body from the top lists (see top-page.ts), or null when they cannot answer this query: the
 * page's contacts and the exact count are read, not chosen among every entry of every term.
 */
function topListBody(plan: Plan, s: Scratch, req: SearchRequest): Uint8Array | null {
  const { index } = plan;
  const count = topPage(index, plan.views, plan.all, plan.direction, req.offset, req.limit, s);
  if (count < 0) return null;
  const need = Math.min(count, req.offset + req.limit);
  if (req.offset >= need) return emptyBody(req, count);
  const out = bodyWriter;
  out.reset();
  out.reserve(DATA_OPEN.length);
  out.raw(DATA_OPEN);
  // topPage left each page contact's entry of one term in s.pageEntry (no search for it again)
  for (let i = req.offset; i < need; i++)
    writeItem(out, plan, s, s.touched[i], req.messagesLimit, i === req.offset, s.pageEntry[i], s.pageTerm[i]);
  return writeTail(out, req, count, need - req.offset);
}

/**
 * Answers one search (CONTRACT 3) as the UTF-8 bytes of the whole 200 body, byte for byte what
 * JSON.stringify of the answer gives. The bytes are a view of this thread's output buffer, valid
 * until the next search on this thread. A null index (organization without a snapshot) gives an
 * empty page. Work grows with the contacts matching the terms and the page's messages, not with
 * the organization.
 */
export function searchBody(index: OrgIndex | null, req: SearchRequest): Uint8Array {
  if (index === null || index.messageCount === 0) return emptyBody(req, 0);
  // the date filter is one contiguous ordinal window, because ordinals follow sent_at descending
  const lo = req.to === null ? 0 : firstOrdinal(index.msgSentAt, req.to, false);
  const hi = req.from === null ? index.messageCount : firstOrdinal(index.msgSentAt, req.from, true);
  if (lo >= hi) return emptyBody(req, 0);

  const all = req.match === 'all';
  const s = scratchFor(index);
  const views: TermView[] = [];
  for (let j = 0; j < req.terms.length; j++) {
    const v = termView(index, req.terms[j], s, j);
    if (v !== null) views.push(v);
    else if (all) return emptyBody(req, 0);
  }
  if (views.length === 0) return emptyBody(req, 0);

  const precomputed = req.channel === null && lo === 0 && hi === index.messageCount;
  const direction = req.direction === 'inbound' ? INBOUND : req.direction === 'outbound' ? OUTBOUND : BOTH;
  const plan: Plan = { index, views, all, mask: filterMask(req), lo, hi, direction, precomputed };
  if (req.messagesLimit > s.picked.length) s.picked = new Uint32Array(req.messagesLimit);
  if (precomputed) {
    const body = topListBody(plan, s, req);
    if (body !== null) return body;
  }
  const count = matchContacts(plan, s);
  const need = Math.min(count, req.offset + req.limit);
  if (req.offset >= need) return emptyBody(req, count);

  const top = smallestKeys(s.keys, count, need, s.heap, req.offset);
  const out = bodyWriter;
  out.reset();
  out.reserve(DATA_OPEN.length);
  out.raw(DATA_OPEN);
  for (let i = req.offset; i < need; i++) {
    const c = index.contactByIdRank[top[i] % index.contactCount];
    writeItem(out, plan, s, c, req.messagesLimit, i === req.offset);
  }
  return writeTail(out, req, count, need - req.offset);
}

/** The answer as an object, decoded from searchBody's bytes: for tests and tools, never the server. */
export function executeSearch(index: OrgIndex | null, req: SearchRequest): SearchResponse {
  const body = searchBody(index, req);
  return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as SearchResponse;
}
