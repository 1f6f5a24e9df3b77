/** The byte columns' string handling against its definitions: the UTF-8 round trip and JSON.stringify. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { jsonEscaped, StringColumnBuilder } from '../../../src/index/string-column.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('STRING_COLUMN_SEED', 'test/unit/index/string-column.test.ts');

const roundTrip = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('a', '"', '\\', '\n', '\u0001', '\ud83d', '\ude00', 'é', '\ud83d\ude00'),
    maxLength: 12,
  }),
);

test('jsonEscaped is JSON.stringify without quotes; the column holds its bytes', () => {
  fc.assert(
    fc.property(fc.array(text, { maxLength: 20 }), (strings) => {
      const column = new StringColumnBuilder();
      for (const s of strings) {
        assert.equal(jsonEscaped(s), JSON.stringify(s).slice(1, -1));
        column.push(s);
      }
      const { bytes, offsets } = column.build();
      assert.equal(offsets.length, strings.length + 1);
      strings.forEach((s, i) => {
        assert.deepEqual(Buffer.from(bytes.subarray(offsets[i], offsets[i + 1])), Buffer.from(s, 'utf8'));
      });
    }),
    { seed: SEED, numRuns: 3000 },
  );
});

test('StringColumnBuilder: strings past the first buffer and three-byte units grow it exactly', () => {
  const column = new StringColumnBuilder();
  const strings = Array.from({ length: 3000 }, (_, i) => '\u20ac'.repeat(i % 97) + '\ud800'.repeat(i % 3) + i);
  for (const s of strings) column.push(s);
  const { bytes, offsets } = column.build();
  assert.equal(
    bytes.length,
    strings.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0),
  );
  assert.equal(Buffer.from(bytes).toString('utf8'), strings.map(roundTrip).join(''));
  assert.equal(offsets[strings.length], bytes.length);
});
