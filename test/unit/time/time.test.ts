/** isoString (the renderer's toISOString) against Date.prototype.toISOString. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isoString } from '../../../src/time/iso-string.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('TIME_SEED', 'test/unit/time/time.test.ts');

const MIN = -62167219200000; // 0000-01-01T00:00:00.000Z
const MAX = 253402300799999; // 9999-12-31T23:59:59.999Z

test('isoString equals toISOString: every day of 1899-2101 at day edges, range ends, outside the range', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  for (let day = Date.UTC(1899, 0, 1); day <= Date.UTC(2101, 11, 31); day += 86400000) {
    for (const ms of [day, day + 1, day + 86399999, day + 43261001]) assert.equal(isoString(ms), iso(ms));
  }
  for (const ms of [
    MIN,
    MIN + 1,
    MAX,
    MAX - 1,
    0,
    -0,
    -1,
    1,
    Date.UTC(2000, 1, 29),
    Date.UTC(1900, 1, 28, 23, 59, 59, 999),
    Date.UTC(1600, 1, 29),
    Date.UTC(4, 1, 29),
    Date.UTC(9999, 11, 31),
    MIN - 1,
    MAX + 1,
    8.64e15,
    -8.64e15,
    1.5,
    -1.5,
  ]) {
    assert.equal(isoString(ms), iso(ms), String(ms));
  }
  assert.throws(() => isoString(NaN), RangeError);
});

test('isoString equals toISOString on random instants (fast-check)', () => {
  fc.assert(
    fc.property(fc.integer({ min: MIN - 1e12, max: MAX + 1e12 }), (ms) => {
      assert.equal(isoString(ms), new Date(ms).toISOString());
    }),
    { seed: SEED, numRuns: 200_000 },
  );
});
