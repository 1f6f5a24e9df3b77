/**
 * A flat index as the layout before posting starts in the entry words wrote it
 * (src/index/post-starts.ts): a Uint16 distance an entry in a column of its own (entryPostOffset),
 * bases per 64 entries, far blocks past a span of 65,535, and entryNewestIn one word an entry with
 * its no-inbound bit at bit 31. For tests of the loader's conversion of it.
 */
import { noInbound, rankMask } from '../../src/index/layout.js';
import { postStart } from '../../src/index/post-starts.js';
import type { FlatIndex } from '../../src/store/flat-index.js';

const BLOCK = 64;

/** Whole starts as the previous layout encoded them: bases per 64 entries, Uint16 distances, far blocks. */
export function encodeSeparatePostStarts(starts: Uint32Array): {
  base: Int32Array;
  offsets: Uint16Array;
  far: Uint32Array;
} {
  const n = starts.length;
  const base = new Int32Array(Math.ceil(n / BLOCK));
  const offsets = new Uint16Array(n);
  const far: number[] = [];
  for (let b = 0; b < base.length; b++) {
    const from = b * BLOCK,
      to = Math.min(n, from + BLOCK);
    if (starts[to - 1] - starts[from] > 0xffff) {
      base[b] = ~far.length;
      for (let e = from; e < to; e++) far.push(starts[e]);
    } else {
      base[b] = starts[from];
      for (let e = from; e < to; e++) offsets[e] = starts[e] - starts[from];
    }
  }
  return { base, offsets, far: Uint32Array.from(far) };
}

export function toSeparatePostStarts(flat: FlatIndex): void {
  const s = flat.sections;
  const n = flat.messageCount;
  const words = s.entryNewestIn as Uint32Array;
  const entries = words.length - 1;
  const x = {
    messageCount: n,
    entryPostBase: s.entryPostBase as Int32Array,
    entryPostFar: s.entryPostFar as Uint32Array,
    entryNewestIn: words,
  };
  const starts = new Uint32Array(entries + 1);
  for (let e = 0; e <= entries; e++) starts[e] = postStart(x, e);
  const { base, offsets, far } = encodeSeparatePostStarts(starts);
  const none = noInbound(n),
    field = rankMask(n);
  const old = new Uint32Array(entries);
  for (let e = 0; e < entries; e++) {
    const r = words[e] & field;
    old[e] = r >= none ? (0x80000000 | (r - none)) >>> 0 : r;
  }
  s.entryPostBase = base;
  s.entryPostOffset = offsets;
  s.entryPostFar = far;
  s.entryNewestIn = old;
}
