/** First position in list[start, end) whose value is >= value (list ascending there). */
export function lowerBound(list: Uint16Array | Uint32Array, start: number, end: number, value: number): number {
  let lo = start,
    hi = end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * lowerBound over an entry's postings: a short range is scanned, since an entry holds a dozen
 * postings on average and a scan's branch is predictable where a bisection's is a coin toss.
 */
export function postingsLowerBound(list: Uint32Array, start: number, end: number, value: number): number {
  if (end - start > 16) return lowerBound(list, start, end, value);
  let p = start;
  while (p < end && list[p] < value) p++;
  return p;
}
