/** IdSet against a plain Set, past the first Set's limit (lowered) so the shards are used. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { IdSet } from '../../../src/import/id-set.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('ID_SET_SEED', 'test/unit/import/id-set.test.ts');

test('IdSet.add answers as a Set would, in the first Set and in the shards', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: 60 }).map(String)), { maxLength: 200 }),
      fc.integer({ min: 0, max: 50 }),
      (ids, firstMax) => {
        const set = new IdSet(firstMax);
        const plain = new Set<string>();
        for (const id of ids) {
          assert.equal(set.add(id), !plain.has(id), JSON.stringify(id));
          plain.add(id);
        }
      },
    ),
    { seed: SEED, numRuns: 2000 },
  );
});
