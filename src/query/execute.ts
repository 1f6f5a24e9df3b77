import type { OrgIndex } from '../index/org-index.js';
import { CHANNELS } from '../model/records.js';
import { scratchFor, type Scratch } from './scratch.js';
import type { ResultItem, ResultMessage, SearchRequest, SearchResponse } from './search-request.js';
import { termMatches, type TermMatches } from './term-matches.js';

const DIRECTION_CODE = { inbound: 0, outbound: 1, all: -1 } as const;

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

/**
 * Walks the counting messages (filters applied, at least one term matched) in ascending ordinal,
 * i.e. newest first, aggregating per contact. Returns how many contacts were touched.
 */
function collect(index: OrgIndex, req: SearchRequest, lists: TermMatches[], s: Scratch): { touched: number; counting: number } {
  const gen = s.generation;
  const dir = DIRECTION_CODE[req.direction];
  const channel = req.channel === null ? -1 : CHANNELS.indexOf(req.channel);
  const { msgContact, msgConversation, msgChannel, msgDirection } = index;
  const k = lists.length;
  const pos = new Array<number>(k);
  for (let j = 0; j < k; j++) pos[j] = lists[j].start;
  let touched = 0;
  let counting = 0;
  // one term (the common case) reads its list directly; more terms go through a k-way merge
  const single = k === 1 ? lists[0] : null;
  let p = single === null ? 0 : single.start;
  for (;;) {
    let o = 0xffffffff;
    let mask = 0;
    if (single !== null) {
      if (p === single.end) break;
      o = single.list[p++];
      mask = 1;
    } else for (let j = 0; j < k; j++) {
      const l = lists[j];
      if (pos[j] < l.end) {
        const v = l.list[pos[j]];
        if (v < o) {
          o = v;
          mask = 1 << j;
        } else if (v === o) mask |= 1 << j;
      }
    }
    if (mask === 0) break;
    if (single === null) for (let j = 0; j < k; j++) if (mask & (1 << j)) pos[j]++;

    if (dir >= 0 && msgDirection[o] !== dir) continue;
    if (channel >= 0 && msgChannel[o] !== channel) continue;
    const c = msgContact[o];
    if (s.contactStamp[c] !== gen) {
      s.contactStamp[c] = gen;
      s.contactCount[c] = 0;
      s.contactMask[c] = 0;
      s.contactConversations[c] = 0;
      s.contactNewest[c] = o;
      s.contactPageSlot[c] = -1;
      s.touched[touched++] = c;
    }
    s.contactCount[c]++;
    s.contactMask[c] |= mask;
    s.contactOldest[c] = o;
    const conv = msgConversation[o];
    if (s.conversationStamp[conv] !== gen) {
      s.conversationStamp[conv] = gen;
      s.contactConversations[c]++;
    }
    s.counting[counting++] = o;
  }
  return { touched, counting };
}

/**
 * Matching contacts in answer order: last_matched_at descending, ties by contact id. `touched`
 * is already ordered by newest message, so only runs of equal sent_at need re-sorting.
 */
function orderMatches(index: OrgIndex, req: SearchRequest, s: Scratch, touched: number, k: number): Uint32Array {
  const full = (1 << k) - 1;
  let n = 0;
  const out = new Uint32Array(touched);
  for (let i = 0; i < touched; i++) {
    const c = s.touched[i];
    if (req.match === 'any' || s.contactMask[c] === full) out[n++] = c;
  }
  const { msgSentAt, contactIdRank } = index;
  const rank = (c: number) => contactIdRank[c];
  for (let i = 0; i < n; ) {
    const t = msgSentAt[s.contactNewest[out[i]]];
    let j = i + 1;
    while (j < n && msgSentAt[s.contactNewest[out[j]]] === t) j++;
    if (j - i > 1) out.subarray(i, j).sort((a, b) => rank(a) - rank(b));
    i = j;
  }
  return out.subarray(0, n);
}

function renderMessage(index: OrgIndex, o: number): ResultMessage {
  return {
    id: index.msgId[o],
    conversation_id: index.conversationIds[index.msgConversation[o]],
    channel: index.channelNames[index.msgChannel[o]],
    direction: index.msgDirection[o] === 0 ? 'inbound' : 'outbound',
    content: index.msgContent[o],
    sent_at: new Date(index.msgSentAt[o]).toISOString(),
  };
}

/**
 * Answers one search (CONTRACT 3). A null index (organization without a snapshot) gives an
 * empty page. Work grows with the matching messages in the date window, not the organization.
 */
export function executeSearch(index: OrgIndex | null, req: SearchRequest): SearchResponse {
  if (index === null || index.messageCount === 0) return emptyResponse(req, 0);
  // the date filter is one contiguous ordinal window, because ordinals follow sent_at descending
  const lo = req.to === null ? 0 : firstOrdinal(index.msgSentAt, req.to, false);
  const hi = req.from === null ? index.messageCount : firstOrdinal(index.msgSentAt, req.from, true);
  if (lo >= hi) return emptyResponse(req, 0);

  const lists: TermMatches[] = [];
  for (const term of req.terms) {
    const l = termMatches(index, term, lo, hi);
    if (l.start === l.end && req.match === 'all') return emptyResponse(req, 0);
    lists.push(l);
  }
  const s = scratchFor(index);
  const { touched, counting } = collect(index, req, lists, s);
  const matches = orderMatches(index, req, s, touched, lists.length);
  const count = matches.length;
  const pageEnd = Math.min(count, req.offset + req.limit);
  if (req.offset >= pageEnd) return emptyResponse(req, count);

  const data: ResultItem[] = [];
  for (let i = req.offset; i < pageEnd; i++) {
    const c = matches[i];
    s.contactPageSlot[c] = data.length;
    data.push({
      contact: index.contacts[c],
      match_count: s.contactCount[c],
      conversations_count: s.contactConversations[c],
      first_matched_at: new Date(index.msgSentAt[s.contactOldest[c]]).toISOString(),
      last_matched_at: new Date(index.msgSentAt[s.contactNewest[c]]).toISOString(),
      messages: [],
    });
  }
  // newest messages of the page's contacts: counting is already in answer order
  if (req.messagesLimit > 0) {
    let missing = data.length;
    for (let i = 0; i < counting && missing > 0; i++) {
      const o = s.counting[i];
      const c = index.msgContact[o];
      if (s.contactStamp[c] !== s.generation) continue;
      const slot = s.contactPageSlot[c];
      if (slot < 0) continue;
      const msgs = data[slot].messages;
      if (msgs.length < req.messagesLimit) {
        msgs.push(renderMessage(index, o));
        if (msgs.length === req.messagesLimit || msgs.length === s.contactCount[c]) missing--;
      }
    }
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
