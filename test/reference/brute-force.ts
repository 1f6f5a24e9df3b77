/**
 * Brute-force reference for CONTRACT 1-3, written from the contract text alone: it shares no code
 * with src/text, src/request, src/query or src/index, so a property test comparing the two is a second reading.
 * It scans every message for every request; correctness over speed, small data only.
 */
import type { Contact, MessageLine } from '../../src/model/records.js';
import type { ResultItem, ResultMessage, SearchRequest, SearchResponse } from '../../src/request/search-request.js';
import { referenceSentAt } from './time.js';

const LETTER_OR_DIGIT = /^[\p{L}\p{N}]$/u;
const MARK = /^\p{M}$/u;
const WHITE_RUN = /\s+/g;
// CONTRACT 2.1: keywords split on , ; \r\n \n \r, on the raw text (CONTRACT 10: before N()).
const KEYWORD_SEPARATORS = /\r\n|\n|\r|,|;/;
const MAX_TERM = 200;
const MAX_TERMS = 10;

/** N(s) of CONTRACT 1, one code point at a time: NFKD, drop \p{M}, toLowerCase() over the whole text. */
export function referenceNormalize(s: string): string {
  let kept = '';
  for (const cp of s.normalize('NFKD')) if (!MARK.test(cp)) kept += cp;
  // Whole text at once, so Greek final sigma context applies (CONTRACT 10).
  return kept.toLowerCase();
}

/** Tokens of a text (CONTRACT 1): maximal runs of \p{L}/\p{N} code points of N(text). */
export function referenceTokens(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const cp of referenceNormalize(text)) {
    if (LETTER_OR_DIGIT.test(cp)) cur += cp;
    else if (cur !== '') {
      out.push(cur);
      cur = '';
    }
  }
  if (cur !== '') out.push(cur);
  return out;
}

function codePoints(s: string): string[] {
  return Array.from(s);
}

/**
 * CONTRACT 2 rules 1-6 (and 10), applied in the order the contract numbers them:
 *   2: N(), trim, collapse \s runs to one space;
 *   3: discard fewer than 2 code points or no token;
 *   4: longer than 200 code points: cut to 200, then trim;
 *   5: dedupe (first kept); 6: first 10.
 * Reading chosen: rule 3 is NOT re-applied after rule 4. It only could matter for the "no token"
 * half (a cut term keeps >= 199 code points, since after rule 2 there is at most one trailing
 * space to trim): a term whose first 200 code points hold no letter/digit survives as a
 * token-less term. The contract text orders the checks 3 before 4 and says nothing of a re-check.
 */
export function referenceTerms(q: string | null, keywords: string | null, keyword: string[]): string[] {
  const raw: string[] = [];
  if (q !== null) raw.push(q);
  if (keywords !== null) raw.push(...keywords.split(KEYWORD_SEPARATORS));
  raw.push(...keyword);

  const seen = new Set<string>();
  const terms: string[] = [];
  for (const r of raw) {
    let t = referenceNormalize(r).trim().replace(WHITE_RUN, ' ');
    if (codePoints(t).length < 2 || referenceTokens(t).length === 0) continue;
    const cps = codePoints(t);
    if (cps.length > MAX_TERM) t = cps.slice(0, MAX_TERM).join('').trim();
    // Reading chosen for the product: the discard rule holds for the final term too, so a cut
    // never leaves a term without tokens (which would otherwise match every message).
    if (codePoints(t).length < 2 || referenceTokens(t).length === 0) continue;
    if (seen.has(t)) continue;
    seen.add(t);
    terms.push(t);
  }
  return terms.slice(0, MAX_TERMS);
}

/**
 * Does the term's token sequence occur as a contiguous run of the message's tokens (CONTRACT 1)?
 * An empty term sequence (only reachable through the rule-4 reading above) occurs everywhere.
 */
export function referenceMatches(termTokens: string[], messageTokens: string[]): boolean {
  for (let start = 0; start + termTokens.length <= messageTokens.length; start++) {
    let ok = true;
    for (let k = 0; k < termTokens.length; k++) {
      if (messageTokens[start + k] !== termTokens[k]) {
        ok = false;
        break;
      }
    }
    if (ok) return true;
  }
  return false;
}

function instantOf(m: MessageLine): number {
  const t = referenceSentAt(m.sent_at);
  if (t === null) throw new Error(`reference: message ${m.id} has invalid sent_at ${JSON.stringify(m.sent_at)}`);
  return t;
}

interface Counting {
  m: MessageLine;
  at: number;
}

/** CONTRACT 3 by brute force over every message; only records of req.organizationId count. */
export function referenceSearch(contacts: Contact[], messages: MessageLine[], req: SearchRequest): SearchResponse {
  const termTokens = req.terms.map((t) => referenceTokens(t));
  const orgContacts = new Map<string, Contact>();
  for (const c of contacts) if (c.organization_id === req.organizationId) orgContacts.set(c.id, c);

  const perContact = new Map<string, { counting: Counting[]; termsHit: Set<number> }>();
  for (const m of messages) {
    if (m.organization_id !== req.organizationId) continue;
    if (req.direction !== 'all' && m.direction !== req.direction) continue;
    if (req.channel !== null && m.channel !== req.channel) continue;
    const at = instantOf(m);
    if (req.from !== null && at < req.from) continue;
    if (req.to !== null && at > req.to) continue;
    const tokens = referenceTokens(m.content);
    const hit: number[] = [];
    termTokens.forEach((tt, i) => {
      if (referenceMatches(tt, tokens)) hit.push(i);
    });
    if (hit.length === 0) continue;
    if (!orgContacts.has(m.contact_id))
      throw new Error(`reference: message ${m.id} names unknown contact ${m.contact_id}`);
    let entry = perContact.get(m.contact_id);
    if (!entry) {
      entry = { counting: [], termsHit: new Set() };
      perContact.set(m.contact_id, entry);
    }
    entry.counting.push({ m, at });
    for (const i of hit) entry.termsHit.add(i);
  }

  const matched: { item: ResultItem; last: number; id: string }[] = [];
  for (const [contactId, { counting, termsHit }] of perContact) {
    if (req.match === 'all' && termsHit.size !== req.terms.length) continue;
    const c = orgContacts.get(contactId)!;
    let first = Infinity,
      last = -Infinity;
    const conversations = new Set<string>();
    for (const { m, at } of counting) {
      if (at < first) first = at;
      if (at > last) last = at;
      conversations.add(m.conversation_id);
    }
    const ordered = [...counting].sort((a, b) =>
      a.at !== b.at ? b.at - a.at : a.m.id < b.m.id ? -1 : a.m.id > b.m.id ? 1 : 0,
    );
    const sample: ResultMessage[] = ordered.slice(0, req.messagesLimit).map(({ m, at }) => ({
      id: m.id,
      conversation_id: m.conversation_id,
      channel: m.channel,
      direction: m.direction,
      content: m.content,
      sent_at: new Date(at).toISOString(),
    }));
    const item: ResultItem = {
      contact: {
        id: c.id,
        organization_id: c.organization_id,
        name: c.name,
        phone: c.phone,
        email: c.email,
        avatar_url: c.avatar_url,
        source: c.source,
      },
      match_count: counting.length,
      conversations_count: conversations.size,
      first_matched_at: new Date(first).toISOString(),
      last_matched_at: new Date(last).toISOString(),
      messages: sample,
    };
    matched.push({ item, last, id: c.id });
  }
  matched.sort((a, b) => (a.last !== b.last ? b.last - a.last : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

  const count = matched.length;
  const data = matched.slice(req.offset, req.offset + req.limit).map((x) => x.item);
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
    query: {
      organization_id: req.organizationId,
      terms: req.terms,
      match: req.match,
      direction: req.direction,
      channel: req.channel,
      from: req.from === null ? null : new Date(req.from).toISOString(),
      to: req.to === null ? null : new Date(req.to).toISOString(),
    },
  };
}
