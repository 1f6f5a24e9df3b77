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
