import type { OrgIndex } from '../index/org-index.js';
import { CHANNELS } from '../model/records.js';
import { filterMask } from './filter-mask.js';
import { scratchFor, type Scratch } from './scratch.js';
import type { ResultItem, ResultMessage, SearchRequest, SearchResponse } from './search-request.js';
import { smallestKeys } from './select.js';
import { stringAt } from '../index/string-column.js';
import { isoString } from '../time/iso-string.js';
import { containsPhrase, lowerBound, termView, type TermView } from './term-view.js';

/** First ordinal whose sent_at is below `ms` (`strict`) or at most `ms`; sent_at is non-increasing. */
function firstOrdinal(sentAt: Float64Array, ms: number, strict: boolean): number {
  let lo = 0, hi = sentAt.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? sentAt[mid] >= ms : sentAt[mid] > ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function echo(req: SearchRequest): SearchResponse['query'] {
  return {
    organization_id: req.organizationId,
    terms: req.terms,
    match: req.match,
    direction: req.direction,
    channel: req.channel,
    from: req.from === null ? null : new Date(req.from).toISOString(),
    to: req.to === null ? null : new Date(req.to).toISOString(),
  };
}

function emptyResponse(req: SearchRequest, count: number): SearchResponse {
  return {
    data: [],
    pagination: { limit: req.limit, offset: req.offset, count, has_more: false, next_offset: null },
    query: echo(req),
  };
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
  /** 0 inbound, 1 outbound, 2 both */
  direction: number;
  /** no date and no channel filter: the per-entry newest ranks answer matchContacts */
  precomputed: boolean;
}

/** Newest message of view position e that passes the filters and matches the term, or -1. */
function newestCounting(plan: Plan, v: TermView, e: number): number {
  const { index } = plan;
  const g = v.entry === null ? e : v.entry[e];
  if ((index.entryMask[g] & plan.mask) === 0) return -1;
  const { msgCombo, postings } = index;
  const end = index.entryPostStart[g + 1];
  let p = index.entryPostStart[g];
  if (plan.lo > 0) p = lowerBound(postings, p, end, plan.lo);
  for (; p < end; p++) {
    const o = postings[p];
    if (o >= plan.hi) return -1;
    if (((1 << msgCombo[o]) & plan.mask) !== 0 && (v.phrase === null || containsPhrase(index, o, v.phrase))) return o;
  }
  return -1;
}

const NONE = 0xffffffff;

/** First ordinal with the same sent_at as o: equal times share it, so ties go to the contact id. */
function timeRank(sentAt: Float64Array, o: number): number {
  // binary search over [0, o]: O(log n) however many messages share this sent_at
  const t = sentAt[o];
  let lo = 0, hi = o;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sentAt[mid] > t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Time rank of the newest counting message of view position e, or NONE. */
function newestRank(plan: Plan, v: TermView, e: number): number {
  if (plan.precomputed && v.entry === null && v.phrase === null) {
    // no date or channel filter and a plain token: read the precomputed newest per direction
    const { entryNewestIn, entryNewestOut } = plan.index;
    if (plan.direction === 0) return entryNewestIn[e];
    if (plan.direction === 1) return entryNewestOut[e];
    const a = entryNewestIn[e], b = entryNewestOut[e];
    return a < b ? a : b;
  }
  const o = newestCounting(plan, v, e);
  return o < 0 ? NONE : timeRank(plan.index.msgSentAt, o);
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
    if (plan.precomputed && v.entry === null && v.phrase === null && plan.direction !== 2) {
      // The commonest query, one plain token and no filter but the direction: one read an entry,
      // with newestRank's tests hoisted out of a loop that may run over every contact.
      const newest = plan.direction === 0 ? index.entryNewestIn : index.entryNewestOut;
      const contact = v.contact;
      for (let e = v.from; e < v.to; e++) {
        const r = newest[e];
        if (r !== NONE) keys[n++] = r * contactCount + idRank[contact[e]];
      }
      return n;
    }
    for (let e = v.from; e < v.to; e++) {
      const r = newestRank(plan, v, e);
      if (r !== NONE) keys[n++] = r * contactCount + idRank[v.contact[e]];
    }
    return n;
  }
  // Several terms: each view walked on its own (sequential reads), the newest rank and the number
  // of terms passed kept per contact ordinal. Under `all`, views go from the smallest and a
  // contact that failed an earlier one is skipped before any of its postings is read.
  const gen = s.generation;
  const { contactStamp: stamp, contactBest: best, contactHits: hits, touched } = s;
  const order = plan.all ? [...views].sort((a, b) => a.to - a.from - (b.to - b.from)) : views;
  const k = order.length;
  let t = 0;
  for (let j = 0; j < k; j++) {
    const v = order[j];
    const contact = v.contact;
    for (let e = v.from; e < v.to; e++) {
      const c = contact[e];
      const seen = stamp[c] === gen;
      if (plan.all && j > 0 && (!seen || hits[c] !== j)) continue;
      const r = newestRank(plan, v, e);
      if (r === NONE) continue;
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
    if (!plan.all || hits[c] === k) keys[n++] = best[c] * contactCount + idRank[c];
  }
  return n;
}

/** Position of contact c in a view, or -1. */
function positionOf(v: TermView, c: number): number {
  const e = lowerBound(v.contact, v.from, v.to, c);
  return e < v.to && v.contact[e] === c ? e : -1;
}

function renderMessage(index: OrgIndex, s: Scratch, o: number): ResultMessage {
  const combo = index.msgCombo[o];
  return {
    id: stringAt(s.ids, index.msgIdOffsets, o),
    conversation_id: stringAt(s.conversations, index.conversationIdOffsets, index.msgConversation[o]),
    channel: CHANNELS[combo % CHANNELS.length],
    direction: combo < CHANNELS.length ? 'inbound' : 'outbound',
    content: stringAt(s.contents, index.msgContentOffsets, o),
    sent_at: isoString(index.msgSentAt[o]),
  };
}

/** The result item of one matching contact: a merge of its messages over every term. */
function contactResult(plan: Plan, s: Scratch, c: number, messagesLimit: number): ResultItem {
  const { index, views } = plan;
  const k = views.length;
  const { postings, entryPostStart } = index;
  const pos = new Array<number>(k);
  const end = new Array<number>(k);
  for (let j = 0; j < k; j++) {
    const v = views[j];
    const e = positionOf(v, c);
    if (e < 0) {
      pos[j] = end[j] = 0;
      continue;
    }
    const g = v.entry === null ? e : v.entry[e];
    end[j] = entryPostStart[g + 1];
    pos[j] = plan.lo > 0 ? lowerBound(postings, entryPostStart[g], end[j], plan.lo) : entryPostStart[g];
  }
  const gen = s.generation;
  let count = 0, conversations = 0, newest = -1, oldest = -1;
  const messages: ResultMessage[] = [];
  for (;;) {
    // next ordinal over the contact's lists of every term; a message counts once
    let o = 0xffffffff;
    for (let j = 0; j < k; j++) if (pos[j] < end[j] && postings[pos[j]] < o) o = postings[pos[j]];
    if (o >= plan.hi) break;
    const passes = ((1 << index.msgCombo[o]) & plan.mask) !== 0;
    let matched = false;
    for (let j = 0; j < k; j++) {
      if (pos[j] >= end[j] || postings[pos[j]] !== o) continue;
      pos[j]++;
      const phrase = views[j].phrase;
      if (passes && !matched) matched = phrase === null || containsPhrase(index, o, phrase);
    }
    if (!matched) continue;
    count++;
    if (newest < 0) newest = o;
    oldest = o;
    const conv = index.msgConversation[o];
    if (s.conversationStamp[conv] !== gen) {
      s.conversationStamp[conv] = gen;
      conversations++;
    }
    if (messages.length < messagesLimit) messages.push(renderMessage(index, s, o));
  }
  return {
    contact: index.contacts[c],
    match_count: count,
    conversations_count: conversations,
    first_matched_at: isoString(index.msgSentAt[oldest]),
    last_matched_at: isoString(index.msgSentAt[newest]),
    messages,
  };
}

/**
 * Answers one search (CONTRACT 3). A null index (organization without a snapshot) gives an
 * empty page. Work grows with the contacts matching the terms and the page's messages, not
 * with the organization.
 */
export function executeSearch(index: OrgIndex | null, req: SearchRequest): SearchResponse {
  if (index === null || index.messageCount === 0) return emptyResponse(req, 0);
  // the date filter is one contiguous ordinal window, because ordinals follow sent_at descending
  const lo = req.to === null ? 0 : firstOrdinal(index.msgSentAt, req.to, false);
  const hi = req.from === null ? index.messageCount : firstOrdinal(index.msgSentAt, req.from, true);
  if (lo >= hi) return emptyResponse(req, 0);

  const all = req.match === 'all';
  const views: TermView[] = [];
  for (const term of req.terms) {
    const v = termView(index, term);
    if (v !== null) views.push(v);
    else if (all) return emptyResponse(req, 0);
  }
  if (views.length === 0) return emptyResponse(req, 0);

  const precomputed = req.channel === null && lo === 0 && hi === index.messageCount;
  const direction = req.direction === 'inbound' ? 0 : req.direction === 'outbound' ? 1 : 2;
  const plan: Plan = { index, views, all, mask: filterMask(req), lo, hi, direction, precomputed };
  const s = scratchFor(index);
  const count = matchContacts(plan, s);
  const need = Math.min(count, req.offset + req.limit);
  if (req.offset >= need) return emptyResponse(req, count);

  const top = smallestKeys(s.keys, count, need, s.heap);
  const data: ResultItem[] = [];
  for (let i = req.offset; i < need; i++) {
    const c = index.contactByIdRank[top[i] % index.contactCount];
    data.push(contactResult(plan, s, c, req.messagesLimit));
  }
  const hasMore = req.offset + data.length < count;
  return {
    data,
    pagination: {
      limit: req.limit,
      offset: req.offset,
      count,
      has_more: hasMore,
      next_offset: hasMore ? req.offset + req.limit : null,
    },
    query: echo(req),
  };
}
