import { HEAD_INLINE } from '../index/layout.js';
import { lowerBound, postingsLowerBound } from '../index/lower-bound.js';
import { postStartIn } from '../index/post-starts.js';
import { type ContactColumn, contactColumn, tokenFrequency, type OrgIndex } from '../index/org-index.js';
import { anchorOf, containsTokens, encodePhrase, seqEnd, seqStart } from '../index/token-seq.js';
import { tokensOf } from '../text/analyze.js';
import type { Plan } from './plan.js';
import type { Scratch } from './scratch.js';

/**
 * The contacts that may match one term: positions from..to, position e standing for the index
 * entry entry[e] (or e itself when entry is null) of contact[e]. A one-token term is its token's
 * entries as they are. A phrase is its rarest token's entries, minus contacts lacking another of
 * its tokens; its adjacency is checked lazily (`matches`), only on messages a query looks at.
 */
export interface TermView {
  /** entryContact itself, or a phrase's positions in a column of its type (one element kind a loop) */
  contact: ContactColumn;
  entry: Uint32Array | null;
  from: number;
  to: number;
  /** a phrase to check in each message, null for one token (or a pair that is exact) */
  phrase: Phrase | null;
  /**
   * a phrase's entries, position for position, of its rarest key but one that the driving key
   * does not imply (holdsPhrase); null when there is none (or no phrase)
   */
  coEntry: Uint32Array | null;
  /** candidates holdsPhrase tested against coEntry, and those that passed (it stops once most pass) */
  coTested: number;
  coPassed: number;
  /** the token or pair id whose entries the view is, as they are; -1 for a pruned phrase view */
  token: number;
}

/** A phrase's tokens in the byte form of the index's token sequences (token-seq.ts), and its search anchor. */
export interface Phrase {
  readonly bytes: Uint8Array;
  /** where its rarest token starts in `bytes` (anchorOf): made once a query, not once a message */
  readonly anchorAt: number;
}

/** Does message o contain the phrase as a contiguous run of its tokens? */
export function containsPhrase(index: OrgIndex, o: number, phrase: Phrase): boolean {
  const from = seqStart(index, o);
  return containsTokens(index.tokenSeqBytes, from, seqEnd(index, o, from), phrase.bytes, phrase.anchorAt);
}

/**
 * Does message o, a candidate at position e of phrase view v, contain the phrase? First whether
 * the contact's entry of the view's second key holds o: every message with the phrase holds each
 * of its keys, and that sorted list, read near where the last test read it, turns away most
 * candidates of a phrase of frequent words without their token sequence (a scattered read).
 * Ten phrases of frequent words ("qual o o", "o de o", ...) spent ~20 ms a request at 1M
 * messages in those sequences.
 */
export function holdsPhrase(plan: Plan, v: TermView, e: number, o: number): boolean {
  // (small, so that the walks inline it: a phrase without a second key pays one test)
  return (v.coEntry === null || coHolds(plan, v, e, o)) && containsPhrase(plan.index, o, v.phrase as Phrase);
}

/** holdsPhrase's first test: does the contact's entry of v's second key hold o? */
function coHolds(plan: Plan, v: TermView, e: number, o: number): boolean {
  v.coTested++;
  if (!entryHolds(plan, (v.coEntry as Uint32Array)[e], o)) return false;
  // A key the phrase's words nearly always come with ("segunda via" and "do boleto") turns
  // away almost nothing, and its reads made such a phrase ~19% slower: once 7 of 8 candidates
  // pass, the rest of the query goes straight to the sequences.
  if (++v.coPassed * 8 > v.coTested * 7 && v.coTested >= CO_TRIAL) v.coEntry = null;
  return true;
}

/**
 * A phrase whose driving key is in fewer messages than this takes no second key: its few
 * candidates' sequences cost less than the lookups (a phrase of two words round robin over 2,000
 * organizations of ~100 messages: 9.0-9.8 µs a search without, 10.2-11.5 with).
 */
const CO_MIN_CANDIDATES = 1024;

/** Candidates a phrase view's second key is tested on before holdsPhrase may give it up. */
const CO_TRIAL = 256;

/** Does entry g list message o (its inline head, or one of its stored postings)? */
function entryHolds(plan: Plan, g: number, o: number): boolean {
  const { index } = plan;
  const { entryNewestIn: words, entryPostBase: bases, entryPostFar: far, storedPostings: postings } = index;
  if ((index.entryFlags[g] & HEAD_INLINE) !== 0 && (words[g] & plan.headField) === o) return true;
  const end = postStartIn(bases, words, far, plan.postShift, g + 1);
  const p = postingsLowerBound(postings, postStartIn(bases, words, far, plan.postShift, g), end, o);
  return p < end && postings[p] === o;
}

/**
 * The view of the term whose tokens (termTokens) are `tokens`, or null when no message can match
 * it. A phrase's pruned positions (and its second key's entries) live in the scratch arrays of
 * term slot `slot`: valid for this query only, and no garbage per query.
 */
export function termView(index: OrgIndex, tokens: readonly string[], s: Scratch, slot: number): TermView | null {
  if (tokens.length === 0) return null;
  const ids = new Uint32Array(tokens.length);
  for (let k = 0; k < tokens.length; k++) {
    const id = index.tokenIds.get(tokens[k]);
    if (id === undefined) return null;
    ids[k] = id;
  }
  const { entryStart, entryContact } = index;
  if (ids.length === 1)
    return {
      contact: entryContact,
      entry: null,
      from: entryStart[ids[0]],
      to: entryStart[ids[0] + 1],
      phrase: null,
      coEntry: null,
      coTested: 0,
      coPassed: 0,
      token: ids[0],
    };

  // Every token, and every indexed pair of adjacent frequent tokens, must be in a matching
  // message: the rarest of them drives, the others prune contacts.
  const keys = [...new Set(ids)];
  const vocabulary = index.tokenIds.size;
  // each indexed pair and its two tokens, three numbers a pair (a message holding the pair holds them)
  let pairTokens: number[] | null = null;
  let pairs = 0;
  for (let k = 1; k < ids.length; k++) {
    const a = ids[k - 1],
      b = ids[k];
    if (tokenFrequency(index, a) < index.pairMinFrequency || tokenFrequency(index, b) < index.pairMinFrequency)
      continue;
    const pair = index.pairIds.get(a * vocabulary + b);
    if (pair === undefined) return null; // these two are never adjacent in any message
    if (!keys.includes(pair)) keys.push(pair);
    (pairTokens ??= []).push(pair, a, b);
    pairs++;
  }
  let d = keys[0];
  for (const t of keys) if (tokenFrequency(index, t) < tokenFrequency(index, d)) d = t;
  // a two-token phrase whose pair is indexed is exact without any adjacency check
  const bytes = ids.length === 2 && pairs === 1 ? null : encodePhrase(index.tokenRank, ids);
  const phrase: Phrase | null = bytes === null ? null : { bytes, anchorAt: anchorOf(bytes) };
  if (phrase === null)
    return {
      contact: entryContact,
      entry: null,
      from: entryStart[keys[keys.length - 1]],
      to: entryStart[keys[keys.length - 1] + 1],
      phrase: null,
      coEntry: null,
      coTested: 0,
      coPassed: 0,
      token: keys[keys.length - 1],
    };

  const others = keys.filter((t) => t !== d);
  const cursor = others.map((t) => entryStart[t]);
  // the second key (holdsPhrase): the rarest other key that d does not imply
  let co = -1;
  if (tokenFrequency(index, d) >= CO_MIN_CANDIDATES) {
    // d's own tokens when it is a pair (a message holding it holds them: no test)
    let a = -1,
      b = -1;
    for (let k = 0; pairTokens !== null && k < pairTokens.length; k += 3)
      if (pairTokens[k] === d) {
        a = pairTokens[k + 1];
        b = pairTokens[k + 2];
      }
    for (let j = 0; j < others.length; j++) {
      const t = others[j];
      if (t === a || t === b) continue;
      if (co < 0 || tokenFrequency(index, t) < tokenFrequency(index, others[co])) co = j;
    }
  }
  const first = entryStart[d],
    last = entryStart[d + 1];
  // a token has at most one entry a contact, so contactCount positions always suffice
  const contact = (s.viewContact[slot] ??= contactColumn(index.contactCount, index.contactCount));
  const entry = (s.viewEntry[slot] ??= new Uint32Array(index.contactCount));
  const coEntry = co < 0 ? null : (s.viewCoEntry[slot] ??= new Uint32Array(index.contactCount));
  let n = 0;
  next: for (let e = first; e < last; e++) {
    const c = entryContact[e];
    for (let j = 0; j < others.length; j++) {
      const end = entryStart[others[j] + 1];
      let p = cursor[j];
      while (p < end && entryContact[p] < c) p++;
      cursor[j] = p;
      if (p === end || entryContact[p] !== c) continue next;
    }
    contact[n] = c;
    // (each cursor is at the contact's entry of its key)
    if (coEntry !== null) coEntry[n] = cursor[co];
    entry[n++] = e;
  }
  if (n === 0) return null;
  return { contact, entry, from: 0, to: n, phrase, coEntry, coTested: 0, coPassed: 0, token: -1 };
}

/**
 * A term's tokens, by the tokenizer the index build used on every message (a term is already
 * N()'d, and N() is idempotent). The query's one call of it lives here, where
 * test/unit/text/text.test.ts checks that it comes from text/analyze.ts.
 */
export function termTokens(term: string): string[] {
  return tokensOf(term);
}

/** Position of contact c in a view, or -1. */
export function positionOf(v: TermView, c: number): number {
  const e = lowerBound(v.contact, v.from, v.to, c);
  return e < v.to && v.contact[e] === c ? e : -1;
}
