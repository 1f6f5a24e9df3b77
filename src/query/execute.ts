/**
 * One search, start to end: the date window, the terms' views, the page's contacts (from the top
 * lists or from every matching contact), and the body rendered as bytes.
 */
import { BOTH, INBOUND, noInbound, OUTBOUND, rankMask } from '../index/layout.js';
import { rankBits } from '../index/post-starts.js';
import type { OrgIndex } from '../index/org-index.js';
import { smallestKeys } from '../index/select.js';
import { firstSentBefore } from '../index/sent-times.js';
import type { SearchRequest, SearchResponse } from '../request/search-request.js';
import { filterMask } from './filter-mask.js';
import { matchContacts } from './match.js';
import type { Plan } from './plan.js';
import { emptyBody, openBody, writePage, writeTail } from './render.js';
import { releaseIndexViews, type Scratch, scratchFor } from './scratch.js';
import { subsumedTerms } from './subsumed.js';
import { termTokens, termView, type TermView } from './term-view.js';
import { topPage } from './top-page.js';

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
  const out = openBody();
  // topPage left each page contact's entry of one term in s.pageEntry (no search for it again)
  writePage(out, plan, s, req.offset, need, req.messagesLimit, true);
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
  const body = pageBody(index, req);
  releaseIndexViews(); // the scratch must not keep a replaced index alive
  return body;
}

function pageBody(index: OrgIndex | null, req: SearchRequest): Uint8Array {
  if (index === null || index.messageCount === 0) return emptyBody(req, 0);
  // the date filter is one contiguous ordinal window, because ordinals follow sent_at descending
  const lo = req.to === null ? 0 : firstSentBefore(index, req.to, true);
  const hi = req.from === null ? index.messageCount : firstSentBefore(index, req.from, false);
  if (lo >= hi) return emptyBody(req, 0);

  const all = req.match === 'all';
  const s = scratchFor(index);
  const views: TermView[] = [];
  const tokens = req.terms.map(termTokens);
  // under `any`, a term containing another term's tokens adds no message (subsumed.ts)
  const skip = all || tokens.length === 1 ? null : subsumedTerms(tokens);
  for (let j = 0; j < req.terms.length; j++) {
    if (skip?.[j] === true) continue;
    const v = termView(index, tokens[j], s, j);
    if (v !== null) views.push(v);
    else if (all) return emptyBody(req, 0);
  }
  if (views.length === 0) return emptyBody(req, 0);

  const precomputed = req.channel === null && lo === 0 && hi === index.messageCount;
  const direction = req.direction === 'inbound' ? INBOUND : req.direction === 'outbound' ? OUTBOUND : BOTH;
  const plan: Plan = {
    index,
    views,
    all,
    mask: filterMask(req),
    lo,
    hi,
    direction,
    precomputed,
    rankField: rankMask(index.messageCount),
    headField: noInbound(index.messageCount) - 1,
    postShift: rankBits(index.messageCount),
  };
  if (req.messagesLimit > s.picked.length) s.picked = new Uint32Array(req.messagesLimit);
  if (precomputed) {
    const body = topListBody(plan, s, req);
    if (body !== null) return body;
  }
  const count = matchContacts(plan, s);
  const need = Math.min(count, req.offset + req.limit);
  if (req.offset >= need) return emptyBody(req, count);

  const top = smallestKeys(s.keys, count, need, s.heap, req.offset);
  // the page's contacts where writePage reads them (matchContacts is done with s.touched)
  for (let i = req.offset; i < need; i++) s.touched[i] = index.contactByIdRank[top[i] % index.contactCount];
  const out = openBody();
  writePage(out, plan, s, req.offset, need, req.messagesLimit, false);
  return writeTail(out, req, count, need - req.offset);
}

/** The answer as an object, decoded from searchBody's bytes: for tests and tools, never the server. */
export function executeSearch(index: OrgIndex | null, req: SearchRequest): SearchResponse {
  const body = searchBody(index, req);
  return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as SearchResponse;
}
