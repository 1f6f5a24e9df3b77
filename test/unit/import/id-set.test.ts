/** IdSet against a plain Set: through its growth, and with ids whose hashes collide. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { IdSet } from '../../../src/import/id-set.js';
import { IdColumn } from '../../../src/model/id-column.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('ID_SET_SEED', 'test/unit/import/id-set.test.ts');

/** Adds `ids` in order, as the importer does (each appended to the column, then its index added); checks each answer. */
function check(ids: string[]): void {
  const column = new IdColumn();
  const set = new IdSet(column);
  const plain = new Set<string>();
  for (const id of ids) {
    // inside a longer string half the time, as the reader thread's ids arrive (one string a batch)
    if (id.length % 2 === 0) column.push(`<${id}>`, 1, id.length + 1);
    else column.push(id);
    const index = column.count - 1;
    assert.equal(column.at(index), id);
    assert.equal(set.add(index), !plain.has(id), JSON.stringify(id));
    plain.add(id);
  }
}

test('IdSet.add answers as a Set would, short and long ids, through its growth', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: 60 }).map(String), fc.uuid()), {
        maxLength: 300,
      }),
      check,
    ),
    { seed: SEED, numRuns: 2000 },
  );
  // many ids: the table doubles several times from its 4,096 slots
  const many = Array.from({ length: 50_000 }, (_, i) => `m_${i % 40_000}_${i % 7}`);
  check(many);
});

test('IdSet: ids of equal hash are told apart by their text', () => {
  // FNV-1a 32-bit collisions over UTF-16 units, found by search: each pair hashes the same
  const pairs = collisions(3);
  assert.ok(pairs.length === 3);
  for (const [a, b] of pairs) check([a, b, a, b, a + 'x']);
});

/** n pairs of distinct 6-letter ids with the same FNV-1a hash (a birthday search). */
function collisions(n: number): [string, string][] {
  const fnv = (s: string): number => {
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    return h >>> 0;
  };
  const seen = new Map<number, string>();
  const out: [string, string][] = [];
  for (let i = 0; out.length < n; i++) {
    const s = 'id' + i.toString(36);
    const h = fnv(s);
    const other = seen.get(h);
    if (other !== undefined) out.push([other, s]);
    else seen.set(h, s);
  }
  return out;
}
