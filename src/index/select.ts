/**
 * The `need` smallest of keys[0..n) in ascending order, at least from position `from` on (a page
 * reads only [from, need): positions before `from` hold the smaller keys, unordered); keys may be
 * reordered. A first page uses a bounded max-heap (about n comparisons); a deep page partitions
 * with quickselect twice and sorts only the page's keys.
 */
export function smallestKeys(keys: Float64Array, n: number, need: number, heap: Float64Array, from = 0): Float64Array {
  if (need * 16 >= n || need >= n) {
    const end = Math.min(need, n);
    if (end < n) partition(keys, 0, n - 1, end - 1);
    if (from > 0 && from < end) partition(keys, 0, end - 1, from - 1);
    keys.subarray(Math.min(from, end), end).sort();
    return keys;
  }
  let size = 0;
  for (let i = 0; i < n; i++) size = offerKey(heap, size, need, keys[i]);
  return heap.subarray(0, size).sort();
}

/**
 * One key offered to a bounded max-heap of the `need` smallest keys seen so far, heap[0 .. size)
 * with the largest at heap[0] once full (a key above it cannot enter); returns the new size.
 * Sorting heap[0 .. size) afterwards gives smallestKeys's answer.
 */
export function offerKey(heap: Float64Array, size: number, need: number, k: number): number {
  if (size < need) {
    // sift up
    let j = size;
    while (j > 0) {
      const parent = (j - 1) >> 1;
      if (heap[parent] >= k) break;
      heap[j] = heap[parent];
      j = parent;
    }
    heap[j] = k;
    return size + 1;
  }
  if (k < heap[0]) {
    // replace the largest and sift down
    let j = 0;
    for (;;) {
      let child = 2 * j + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1] > heap[child]) child++;
      if (heap[child] <= k) break;
      heap[j] = heap[child];
      j = child;
    }
    heap[j] = k;
  }
  return size;
}

/** Quickselect (Hoare): afterwards a[lo..k] are the k - lo + 1 smallest of a[lo..hi]. Keys are distinct. */
function partition(a: Float64Array, lo: number, hi: number, k: number): void {
  while (lo < hi) {
    // median of three as pivot keeps sorted inputs linear
    const mid = (lo + hi) >>> 1;
    const x = a[lo],
      y = a[mid],
      z = a[hi];
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo,
      j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}
