/**
 * The hand-written RFC 3339 parser of the import against its regex definition, and both against
 * the test reference's own reading of CONTRACT 9 (test/reference/time.ts), which the brute-force
 * reference reads message times with.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseRfc3339, parseRfc3339ByRegex } from '../../../src/time/rfc3339.js';
import { testSeed } from '../../helpers/seed.js';
import { referenceSentAt } from '../../reference/time.js';

const SEED = testSeed('RFC3339_SEED', 'test/unit/time/rfc3339.test.ts');

const same = (s: string): void => {
  const a = parseRfc3339(s),
    b = parseRfc3339ByRegex(s);
  assert.ok(Object.is(a, b), `${JSON.stringify(s)}: ${a} (hand) vs ${b} (regex)`);
  const r = referenceSentAt(s);
  assert.ok(Object.is(a, r), `${JSON.stringify(s)}: ${a} (hand) vs ${r} (test reference)`);
};

test('rfc3339: chosen edges equal the regex reading', () => {
  for (const s of [
    '2024-01-01T00:00:00Z',
    '2024-01-01t00:00:00z',
    '1970-01-01T00:00:00Z',
    '1970-01-01T01:00:00+01:00',
    '1969-12-31T23:59:59.999Z',
    '0000-01-01T00:00:00Z',
    '0000-01-01T00:00:00+23:59',
    '9999-12-31T23:59:59.999999-23:59',
    '2000-02-29T12:00:00Z',
    '1900-02-29T12:00:00Z',
    '2100-02-29T12:00:00Z',
    '2024-02-30T00:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-00-01T00:00:00Z',
    '2024-01-00T00:00:00Z',
    '2024-01-01T24:00:00Z',
    '2024-01-01T23:60:00Z',
    '2024-01-01T23:59:60Z',
    '2024-01-01T00:00:00+24:00',
    '2024-01-01T00:00:00+00:60',
    '2024-01-01T00:00:00-00:00',
    '2024-01-01T00:00:00.Z',
    '2024-01-01T00:00:00.5Z',
    '2024-01-01T00:00:00.05Z',
    '2024-01-01T00:00:00.1234567890123Z',
    '2024-01-01T00:00:00',
    '2024-01-01T00:00Z',
    '2024-01-01 00:00:00Z',
    '2024-01-01T00:00:00Z ',
    '2024-01-01T00:00:00Z\n',
    ' 2024-01-01T00:00:00Z',
    '2024-01-01T00:00:00+0100',
    '2024-01-01T00:00:00+01:00x',
    '2024-01-01T00:00:00+1:00',
    '２０２４-01-01T00:00:00Z',
    '+02024-01-01T00:00:00Z',
    '',
    'Z',
  ])
    same(s);
});

/** Strings near the grammar: valid pieces, with any piece at times replaced by noise. */
const piece = (digits: number, max: number) =>
  fc.oneof(
    { weight: 30, arbitrary: fc.integer({ min: 0, max }).map((v) => String(v).padStart(digits, '0')) },
    { weight: 1, arbitrary: fc.string({ maxLength: digits + 1 }) },
  );
const sep = (ch: string) =>
  fc.oneof({ weight: 40, arbitrary: fc.constant(ch) }, { weight: 1, arbitrary: fc.string({ maxLength: 2 }) });
const nearRfc3339 = fc
  .tuple(
    piece(4, 9999),
    sep('-'),
    piece(2, 13),
    sep('-'),
    piece(2, 32),
    fc.constantFrom('T', 't', ' ', 'x'),
    piece(2, 24),
    sep(':'),
    piece(2, 60),
    sep(':'),
    piece(2, 60),
    fc.oneof(fc.constant(''), fc.stringMatching(/^\.\d{0,12}$/), fc.string({ maxLength: 3 })),
    fc.oneof(
      fc.constantFrom('Z', 'z', '', 'GMT'),
      fc.tuple(fc.constantFrom('+', '-'), piece(2, 24), sep(':'), piece(2, 60)).map((p) => p.join('')),
    ),
    fc.oneof({ weight: 10, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.string({ maxLength: 2 }) }),
  )
  .map((p) => p.join(''));

test('rfc3339: hand parser equals the regex reading on strings near the grammar', () => {
  fc.assert(
    fc.property(nearRfc3339, (s) => same(s)),
    { seed: SEED, numRuns: 20000 },
  );
});

test('rfc3339: every instant of whole milliseconds round-trips through toISOString', () => {
  fc.assert(
    fc.property(fc.integer({ min: -62167219200000, max: 253402300799999 }), (ms) => {
      const iso = new Date(ms).toISOString();
      assert.equal(parseRfc3339(iso), ms);
    }),
    { seed: SEED, numRuns: 5000 },
  );
});
