import { tokenFrequency, type OrgIndex } from '../index/org-index.js';
import { termTokens } from './terms.js';

/**
 * The contacts that may match one term: positions from..to, position e standing for the index
 * entry entry[e] (or e itself when entry is null) of contact[e]. A one-token term is its token's
 * entries as they are. A phrase is its rarest token's entries, minus contacts lacking another of
 * its tokens; its adjacency is checked lazily (`matches`), only on messages a query looks at.
 */
export interface TermView {
  contact: Uint32Array;
  entry: Uint32Array | null;
  from: number;
  to: number;
  /** token ids of a phrase, null for one token */
  phrase: Uint32Array | null;
}

/** First position in list[start, end) whose value is >= value. */
export function lowerBound(list: Uint32Array, start: number, end: number, value: number): number {
  let lo = start, hi = end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Does message o contain the phrase as a contiguous run of its token-id sequence? */
export function containsPhrase(index: OrgIndex, o: number, phrase: Uint32Array): boolean {
  const { seqStart, tokenSeq } = index;
  const len = phrase.length;
  const last = seqStart[o + 1] - len;
  outer: for (let s = seqStart[o]; s <= last; s++) {
    for (let k = 0; k < len; k++) if (tokenSeq[s + k] !== phrase[k]) continue outer;
    return true;
  }
  return false;
}

/** The view of `term`, or null when no message can match it. */
export function termView(index: OrgIndex, term: string): TermView | null {
  const tokens = termTokens(term);
  if (tokens.length === 0) return null;
  const ids = new Uint32Array(tokens.length);
  let driver = 0;
  let driverSize = Infinity;
  for (let k = 0; k < tokens.length; k++) {
    const id = index.tokenIds.get(tokens[k]);
    if (id === undefined) return null;
    ids[k] = id;
    const size = tokenFrequency(index, id);
    if (size < driverSize) {
      driverSize = size;
      driver = k;
    }
  }
  const { entryStart, entryContact } = index;
  const d = ids[driver];
  if (ids.length === 1) return { contact: entryContact, entry: null, from: entryStart[d], to: entryStart[d + 1], phrase: null };

  // keep the driver's contacts that have every other token of the phrase (sorted merges)
  const others = [...new Set(ids)].filter((t) => t !== d);
  const cursor = others.map((t) => entryStart[t]);
  const first = entryStart[d], last = entryStart[d + 1];
  const contact = new Uint32Array(last - first);
  const entry = new Uint32Array(last - first);
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
  return { contact, entry, from: 0, to: n, phrase: ids };
}
