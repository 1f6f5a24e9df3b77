import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { subsumedTerms } from '../../../src/query/subsumed.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('SUBSUMED_SEED', 'test/unit/query/subsumed.test.ts');

const t = (...terms: string[]) => terms.map((s) => s.split(' '));

test('a term containing another term as a contiguous run is skipped, the contained one kept', () => {
  assert.deepEqual(subsumedTerms(t('o o o', 'o o o o', 'o o')), [true, true, false]);
  assert.deepEqual(subsumedTerms(t('meu pedido', 'pedido')), [true, false]);
  // not contiguous: both stay
  assert.deepEqual(subsumedTerms(t('segunda via', 'segunda a via')), [false, false]);
  assert.deepEqual(subsumedTerms(t('via segunda', 'segunda via')), [false, false]);
  // the same tokens (terms spelled apart, "segunda-via" and "segunda via"): the first stays
  assert.deepEqual(subsumedTerms(t('segunda via', 'segunda via', 'a segunda via')), [false, true, true]);
  assert.deepEqual(subsumedTerms(t('pix')), [false]);
  // a token is not a prefix of another: "pedidos" does not contain "pedido"
  assert.deepEqual(subsumedTerms(t('pedidos', 'pedido')), [false, false]);
});

test('every skipped term contains a kept term, and no kept term contains another term', () => {
  const runOf = (outer: string[], inner: string[]) =>
    outer.some((_, at) => at + inner.length <= outer.length && inner.every((x, k) => outer[at + k] === x));
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 5 }), {
        minLength: 1,
        maxLength: 10,
      }),
      (tokens) => {
        const skip = subsumedTerms(tokens);
        assert.ok(
          skip.some((s) => !s),
          'at least one term is kept',
        );
        tokens.forEach((b, i) => {
          const containsKept = tokens.some((a, j) => j !== i && !skip[j] && runOf(b, a));
          if (skip[i]) assert.ok(containsKept, `skipped term ${i} contains a kept one`);
          else
            assert.ok(
              !tokens.some((a, j) => j !== i && (a.length < b.length || j < i) && runOf(b, a)),
              `kept term ${i} contains no shorter or earlier term`,
            );
        });
      },
    ),
    { seed: SEED, numRuns: 2000 },
  );
});
