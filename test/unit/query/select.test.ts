import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { smallestKeys } from '../../../src/index/select.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('SELECT_SEED', 'test/unit/query/select.test.ts');

test('smallestKeys equals sorting and slicing, for every page depth and page start', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 0, max: 1e9 }), { maxLength: 400 }),
      fc.nat(),
      fc.nat(),
      (xs, r, f) => {
        const need = xs.length === 0 ? 0 : 1 + (r % xs.length);
        const from = f % (need + 1);
        const keys = Float64Array.from(xs);
        const got = Array.from(
          smallestKeys(keys, xs.length, need, new Float64Array(xs.length), from).subarray(from, need),
        );
        assert.deepEqual(got, [...xs].sort((a, b) => a - b).slice(from, need));
      },
    ),
    { seed: SEED, numRuns: 2000 },
  );
});
