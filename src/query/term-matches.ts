import type { OrgIndex } from '../index/org-index.js';
import { termTokens } from './terms.js';

/** The ascending message ordinals in [start, end) of `list` that match one term. */
export interface TermMatches {
  list: Uint32Array;
  start: number;
  end: number;
}

const EMPTY: TermMatches = { list: new Uint32Array(0), start: 0, end: 0 };

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

/**
 * Messages in the ordinal window [lo, hi) that match `term` (CONTRACT 1): a one-token term is
 * its posting list slice (no copy); a phrase walks the rarest token's postings and checks
 * adjacency on the stored token-id sequences, never the text.
 */
export function termMatches(index: OrgIndex, term: string, lo: number, hi: number): TermMatches {
  const tokens = termTokens(term);
  const ids = new Array<number>(tokens.length);
  let driver = 0;
  let driverSize = Infinity;
  for (let k = 0; k < tokens.length; k++) {
    const id = index.tokenIds.get(tokens[k]);
    if (id === undefined) return EMPTY;
    ids[k] = id;
    const size = index.postingStart[id + 1] - index.postingStart[id];
    if (size < driverSize) {
      driverSize = size;
      driver = k;
    }
  }
  if (ids.length === 0) return EMPTY;
  const { postings, postingStart } = index;
  const d = ids[driver];
  const start = lowerBound(postings, postingStart[d], postingStart[d + 1], lo);
  const end = lowerBound(postings, start, postingStart[d + 1], hi);
  if (ids.length === 1) return { list: postings, start, end };

  const { seqStart, tokenSeq } = index;
  const out = new Uint32Array(end - start);
  let n = 0;
  const len = ids.length;
  for (let p = start; p < end; p++) {
    const o = postings[p];
    const last = seqStart[o + 1] - len;
    outer: for (let s = seqStart[o]; s <= last; s++) {
      for (let k = 0; k < len; k++) if (tokenSeq[s + k] !== ids[k]) continue outer;
      out[n++] = o;
      break;
    }
  }
  return { list: out, start: 0, end: n };
}
