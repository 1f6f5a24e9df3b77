/** answerOrder: the radix sort gives exactly the comparison sort's order (CONTRACT 3). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { answerOrder } from '../../../src/index/answer-order.js';
import { IdColumn } from '../../../src/model/id-column.js';

/** The order by definition: sent_at descending, ties by id ascending (JS `<`). */
function byComparison(sentAt: Float64Array, id: string[]): Uint32Array {
  const order = Uint32Array.from(sentAt.keys());
  return order.sort((a, b) => sentAt[b] - sentAt[a] || (id[a] < id[b] ? -1 : id[a] > id[b] ? 1 : 0));
}

function check(times: number[], ids?: string[]): void {
  const sentAt = Float64Array.from(times);
  const id = ids ?? times.map((_, i) => `m${(i * 7919) % 1000003}`);
  const expected = [...byComparison(sentAt, id)];
  assert.deepEqual([...answerOrder(sentAt, (i) => id[i], times.length)], expected);
  // the import's ids: code units in a column (any string, lone surrogates included), decoded where times tie
  const column = new IdColumn();
  for (const s of id) column.push(s);
  assert.deepEqual([...answerOrder(sentAt, (i) => column.at(i), times.length)], expected);
}

// whole milliseconds of years 0000-9999, as rfc3339.ts gives them
const MIN_MS = -62167219200000;
const MAX_MS = 253402300799999;

test('answerOrder equals the comparison sort: any whole-millisecond times, ties included', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.integer({ min: MIN_MS, max: MAX_MS }),
          fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_050 }), // many ties
          fc.constantFrom(0, -1, 1, 2 ** 32, 2 ** 32 - 1, 2 ** 43 + 2047),
        ),
        { maxLength: 300 },
      ),
      fc.array(fc.string({ unit: 'binary', maxLength: 4 }), { minLength: 300, maxLength: 300 }),
      (times, words) => {
        // ids are unique in an organization; the words make their order arbitrary (any code units)
        check(
          times,
          times.map((_, i) => `${words[i]}\u0000${i}`),
        );
      },
    ),
    { numRuns: 500 },
  );
});

test('answerOrder: one long tie, sorted by id; a few years of distinct times; the empty and single cases', () => {
  check(Array.from({ length: 5000 }, () => 1_700_000_000_000));
  check(Array.from({ length: 20000 }, (_, i) => 1_600_000_000_000 + ((i * 2654435761) % 100_000_000_000)));
  check([]);
  check([42]);
});

test('answerOrder: times that are not whole milliseconds sort by comparison', () => {
  check([1.5, 1.25, 3, 1.5, -0.5, 2]);
  check([Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 0, 1]);
});
