/**
 * The `need` smallest of keys[0..n), ascending. A full sort when the page reaches deep into the
 * result; otherwise a bounded max-heap, so a first page costs about n comparisons.
 */
export function smallestKeys(keys: Float64Array, n: number, need: number, heap: Float64Array): Float64Array {
  if (need * 8 >= n) return keys.subarray(0, n).sort().subarray(0, need);
  let size = 0;
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (size < need) {
      // sift up
      let j = size++;
      while (j > 0) {
        const parent = (j - 1) >> 1;
        if (heap[parent] >= k) break;
        heap[j] = heap[parent];
        j = parent;
      }
      heap[j] = k;
    } else if (k < heap[0]) {
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
  }
  return heap.subarray(0, size).sort();
}
