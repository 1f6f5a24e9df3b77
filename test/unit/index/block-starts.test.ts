/**
 * Block starts (src/index/block-starts.ts): every value read back as encoded, for columns whose
 * blocks are near (2-byte deltas), far (values whole) or both, up to values near 2^32; and the
 * loader's shape check accepts exactly what the encoder writes.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import {
  blockStartsFit,
  decodeBlockStarts,
  encodeBlockStarts,
  FAR,
  nextStart,
  START_BLOCK_SHIFT,
  startAt,
} from '../../../src/index/block-starts.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('BLOCK_STARTS_SEED', 'test/unit/index/block-starts.test.ts');

/** Non-decreasing values from 0 by the given steps. */
function valuesOf(steps: readonly number[]): Uint32Array {
  const out = new Uint32Array(steps.length + 1);
  for (let i = 0; i < steps.length; i++) out[i + 1] = out[i] + steps[i];
  return out;
}

it('gives every value back, near and far blocks mixed', () => {
  const step = fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 3000 }), fc.constant(0));
  fc.assert(
    fc.property(fc.array(step, { maxLength: 700 }), (steps) => {
      const values = valuesOf(steps);
      const x = encodeBlockStarts(values);
      assert.deepEqual(decodeBlockStarts(x, values.length), values);
      for (let i = 0; i < values.length; i++) assert.equal(startAt(x.base, x.delta, x.far, i), values[i]);
      for (let i = 0; i + 1 < values.length; i++)
        assert.equal(nextStart(x.base, x.delta, x.far, i, values[i]), values[i + 1], `the end of span ${i}`);
      assert.ok(blockStartsFit(x, values.length, values[values.length - 1]));
    }),
    { seed: SEED, numRuns: 500 },
  );
});

it('keeps a far block whole, a near one in 2 bytes a value, and values up to 2^32 - 1', () => {
  const block = 1 << START_BLOCK_SHIFT;
  // block 0 near (span FAR - 1), block 1 far (span FAR), block 2 near again at values past 2^31
  const values = new Uint32Array(3 * block + 1);
  for (let i = 1; i < block; i++) values[i] = i === block - 1 ? FAR - 1 : i;
  for (let i = block; i < 2 * block; i++) values[i] = values[block - 1] + 1 + (i === 2 * block - 1 ? FAR : 0);
  for (let i = 2 * block; i <= 3 * block; i++) values[i] = 0xffffffff - (3 * block - i);
  const x = encodeBlockStarts(values);
  assert.equal(x.far.length, block);
  assert.ok(x.delta.subarray(block, 2 * block).every((d) => d === FAR));
  assert.ok(x.delta.subarray(0, block).every((d) => d < FAR));
  assert.deepEqual(decodeBlockStarts(x, values.length), values);
  assert.equal(startAt(x.base, x.delta, x.far, 3 * block), 0xffffffff);
  assert.ok(blockStartsFit(x, values.length, 0xffffffff));
});

it('the shape check refuses values that go down, pass the end, or read past far', () => {
  const values = valuesOf(Array.from({ length: 200 }, (_, i) => (i === 100 ? 70_000 : i % 7)));
  const end = values[values.length - 1];
  const fresh = () => {
    const x = encodeBlockStarts(values);
    return { base: x.base.slice(), delta: x.delta.slice(), far: x.far.slice() };
  };
  assert.ok(blockStartsFit(fresh(), values.length, end));
  assert.ok(!blockStartsFit(fresh(), values.length, end - 1), 'a last value other than the end');
  assert.ok(!blockStartsFit(fresh(), values.length - 1, end), 'a count other than the column');
  let x = fresh();
  x.delta[2] = x.delta[1] - 1;
  assert.ok(!blockStartsFit(x, values.length, end), 'a value below the one before');
  x = fresh();
  x.delta[3] = FAR;
  assert.ok(!blockStartsFit(x, values.length, end), 'a far delta in a near block');
  x = fresh();
  const farBlock = x.delta.indexOf(FAR) >>> START_BLOCK_SHIFT;
  x.base[farBlock] = x.far.length - 1;
  assert.ok(!blockStartsFit(x, values.length, end), 'a far block read past far');
  x = fresh();
  x.base = x.base.subarray(1);
  assert.ok(!blockStartsFit(x, values.length, end), 'a base column of the wrong length');
});
