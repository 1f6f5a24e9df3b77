import { lowerBound } from '../index/lower-bound.js';
import { type ContactColumn, contactColumn, tokenFrequency, type OrgIndex } from '../index/org-index.js';
import { anchorOf, containsTokens, encodePhrase, seqEnd, seqStart } from '../index/token-seq.js';
import { tokensOf } from '../text/analyze.js';
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
 * The view of the term whose tokens (termTokens) are `tokens`, or null when no message can match it. A phrase's pruned positions live in
 * the scratch arrays of term slot `slot`: valid for this query only, and no garbage per query.
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
      token: ids[0],
    };

  // Every token, and every indexed pair of adjacent frequent tokens, must be in a matching
  // message: the rarest of them drives, the others prune contacts.
  const keys = [...new Set(ids)];
  const vocabulary = index.tokenIds.size;
  let pairs = 0;
  for (let k = 1; k < ids.length; k++) {
    const a = ids[k - 1],
      b = ids[k];
    if (tokenFrequency(index, a) < index.pairMinFrequency || tokenFrequency(index, b) < index.pairMinFrequency)
      continue;
    const pair = index.pairIds.get(a * vocabulary + b);
    if (pair === undefined) return null; // these two are never adjacent in any message
    if (!keys.includes(pair)) keys.push(pair);
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
      token: keys[keys.length - 1],
    };

  const others = keys.filter((t) => t !== d);
  const cursor = others.map((t) => entryStart[t]);
  const first = entryStart[d],
    last = entryStart[d + 1];
  // a token has at most one entry a contact, so contactCount positions always suffice
  const contact = (s.viewContact[slot] ??= contactColumn(index.contactCount, index.contactCount));
  const entry = (s.viewEntry[slot] ??= new Uint32Array(index.contactCount));
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
    entry[n++] = e;
  }
  if (n === 0) return null;
  return { contact, entry, from: 0, to: n, phrase, token: -1 };
}

/** A term's tokens, by the tokenizer the index build used on every message (a term is already N()'d, and N() is idempotent). */
export function termTokens(term: string): string[] {
  return tokensOf(term);
}

/** Position of contact c in a view, or -1. */
export function positionOf(v: TermView, c: number): number {
  const e = lowerBound(v.contact, v.from, v.to, c);
  return e < v.to && v.contact[e] === c ? e : -1;
}
