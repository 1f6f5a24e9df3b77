import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { copyInto } from '../../../src/store/snapshot-format.js';

test('copyInto copies into shared memory as set() does, at any alignment of source and destination', () => {
  const source = new Uint8Array(300_000);
  for (let i = 0; i < source.length; i++) source[i] = (i * 131 + (i >>> 8)) & 0xff;
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 15 }),
      fc.integer({ min: 0, max: 15 }),
      // around the detour's threshold (4,096) and its piece (65,536), and several pieces
      fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 60_000, max: 280_000 })),
      fc.integer({ min: 0, max: 7 }),
      (srcAt, dstAt, length, viewAt) => {
        const src = source.subarray(srcAt, srcAt + length);
        const shared = new Uint8Array(new SharedArrayBuffer(300_040), viewAt);
        const expected = new Uint8Array(300_040 - viewAt);
        shared.fill(0xee);
        expected.fill(0xee);
        copyInto(shared, dstAt, src);
        expected.set(src, dstAt);
        assert.deepEqual(Buffer.from(shared.buffer, shared.byteOffset, shared.length), Buffer.from(expected));
      },
    ),
    { numRuns: 200 },
  );
});
