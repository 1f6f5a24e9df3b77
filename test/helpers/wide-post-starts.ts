/**
 * The posting starts of the layout before 1-byte offsets (2 bytes an entry, blocks of 64), as it
 * wrote snapshots: for the tests of the loader's conversion (src/index/post-starts.ts,
 * decodeWidePostStarts).
 */
export function encodeWide(starts: Uint32Array): { base: Int32Array; offset: Uint16Array; far: Uint32Array } {
  const n = starts.length;
  const blocks = (n + 63) >>> 6;
  const base = new Int32Array(blocks);
  const offset = new Uint16Array(n);
  const far: number[] = [];
  for (let b = 0; b < blocks; b++) {
    const from = b << 6;
    const to = Math.min(n, from + 64);
    if (starts[to - 1] - starts[from] > 0xffff) {
      base[b] = ~far.length;
      for (let e = from; e < to; e++) far.push(starts[e]);
    } else {
      base[b] = starts[from];
      for (let e = from; e < to; e++) offset[e] = starts[e] - starts[from];
    }
  }
  return { base, offset, far: Uint32Array.from(far) };
}
