/** BodyWriter's numbers and timestamps, written as bytes, against String() and toISOString(). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { BodyWriter, bytesOf, utf8 } from '../../../src/query/body-writer.js';
import { encodeSentTimes, SENT_BLOCK } from '../../../src/index/sent-times.js';

const MIN = -62167219200000; // 0000-01-01T00:00:00.000Z
const MAX = 253402300799999; // 9999-12-31T23:59:59.999Z

function written(f: (w: BodyWriter) => void): string {
  const w = new BodyWriter();
  w.reserve(64);
  f(w);
  return Buffer.from(w.view()).toString('latin1');
}

test('iso equals toISOString at range ends, day edges and outside the range', () => {
  for (const ms of [
    MIN,
    MIN + 1,
    MAX,
    MAX - 1,
    0,
    -1,
    1,
    Date.UTC(2000, 1, 29),
    Date.UTC(1600, 1, 29, 23, 59, 59, 999),
    Date.UTC(4, 1, 29),
    Date.UTC(2024, 2, 1),
    MIN - 1,
    MAX + 1,
    8.64e15,
    -8.64e15,
    1.5,
  ]) {
    assert.equal(
      written((w) => w.iso(ms)),
      new Date(ms).toISOString(),
      String(ms),
    );
  }
});

test('iso equals toISOString on both sides of midnight over the whole range', () => {
  // the day is found by a multiplication by 1 / DAY corrected by one: check where it rounds
  const DAY = 86400000;
  const days: number[] = [];
  for (let d = Math.ceil(MIN / DAY); d * DAY <= MAX; d += 997) days.push(d);
  for (let d = -800; d <= 800; d++) days.push(d); // 1967-1972
  for (let d = 18000; d <= 22000; d++) days.push(d); // 2019-2030
  for (const d of days) {
    for (const ms of [d * DAY - 1, d * DAY, d * DAY + 1, d * DAY + DAY - 1]) {
      if (ms < MIN || ms > MAX) continue;
      assert.equal(
        written((w) => w.iso(ms)),
        new Date(ms).toISOString(),
        String(ms),
      );
    }
  }
});

test('iso equals toISOString on random instants (fast-check)', () => {
  fc.assert(
    fc.property(fc.integer({ min: MIN - 1e12, max: MAX + 1e12 }), (ms) => {
      assert.equal(
        written((w) => w.iso(ms)),
        new Date(ms).toISOString(),
      );
    }),
    { numRuns: 100_000 },
  );
});

test('uint equals String() for page numbers, 2^32 edges and 2^53 - 1', () => {
  for (const n of [
    0,
    1,
    9,
    10,
    99,
    100,
    12345,
    0x7fffffff,
    0x80000000,
    0xffffffff,
    0x100000000,
    2 ** 53 - 1,
    2 ** 53 + 99,
  ])
    assert.equal(
      written((w) => w.uint(n)),
      String(n),
    );
  fc.assert(
    fc.property(fc.nat(), (n) =>
      assert.equal(
        written((w) => w.uint(n)),
        String(n),
      ),
    ),
    { numRuns: 20_000 },
  );
});

test('the buffer grows and keeps what was written', () => {
  const w = new BodyWriter();
  const piece = new Uint8Array(1000).fill(65);
  for (let i = 0; i < 3000; i++) {
    w.reserve(piece.length);
    w.slice(bytesOf(piece), 0, i % 2 === 0 ? 1000 : 10);
  }
  assert.equal(w.view().length, 1500 * 1000 + 1500 * 10);
  assert.ok(w.view().every((b) => b === 65));
});

test('slice copies any run of a column at any output position, byte for byte (fast-check)', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 0, maxLength: 300 }),
      fc.nat(300),
      fc.nat(300),
      fc.nat(7),
      (bytes, a, b, lead) => {
        const from = Math.min(a, b, bytes.length),
          to = Math.min(Math.max(a, b), bytes.length);
        // a column view that does not start at its buffer's first byte, as index sections do
        const column = new Uint8Array(bytes.length + 3);
        column.set(bytes, 3);
        const w = new BodyWriter();
        w.reserve(lead + to - from);
        for (let i = 0; i < lead; i++) w.raw(utf8('x'));
        w.slice(bytesOf(column.subarray(3)), from, to);
        assert.deepEqual(
          Buffer.from(w.view()),
          Buffer.concat([Buffer.alloc(lead, 120), Buffer.from(bytes.subarray(from, to))]),
        );
      },
    ),
    { numRuns: 20_000 },
  );
});

test('slice keeps the bits of 8-byte runs that read as NaN (quiet and signalling) at every alignment', () => {
  // slice moves 8 bytes at a time as float64: the columns are UTF-8 and never hold these, but
  // the move must not change them either (no NaN canonicalization on the way)
  const patterns = [
    0x7ff0000000000001n,
    0x7ff4000000000000n,
    0x7ff8000000000000n,
    0xfff0000000000001n,
    0xffffffffffffffffn,
  ];
  for (const bits of patterns) {
    for (let shift = 0; shift < 8; shift++) {
      for (const n of [8, 13, 16, 17, 40]) {
        const column = new Uint8Array(64);
        const view = new DataView(column.buffer);
        for (let at = shift; at + 8 <= column.length; at += 8) view.setBigUint64(at, bits, true);
        for (let from = 0; from + n <= column.length; from += 5) {
          const w = new BodyWriter();
          w.reserve(n);
          w.slice(bytesOf(column), from, from + n);
          assert.deepEqual(Buffer.from(w.view()), Buffer.from(column.subarray(from, from + n)));
        }
      }
    }
  }
});

test('raw writes constant pieces of any length back to back, its word padding overwritten (fast-check)', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 23 }), { maxLength: 12 }), fc.nat(40), (texts, room) => {
      const w = new BodyWriter();
      // a buffer that ends just past the reservation: the padding must not write beyond it
      w.buf = Buffer.alloc(room);
      w.dv = bytesOf(w.buf);
      const pieces = texts.map(utf8);
      w.reserve(pieces.reduce((n, p) => n + p.length, 0));
      for (const p of pieces) w.raw(p);
      assert.equal(Buffer.from(w.view()).toString('utf8'), texts.join(''));
    }),
    { numRuns: 20_000 },
  );
});

test('jsonStrings writes the bytes of JSON.stringify for any list of strings', () => {
  const bytesOfJson = (list: string[]) => {
    const w = new BodyWriter();
    w.reserve(1);
    w.jsonStrings(list);
    return Buffer.from(w.view());
  };
  for (const list of [[], [''], ['que'], ['pode enviar', 'a"b', 'c\\d'], ['\u007f', '\u0000'], ['\ud800'], ['é', 'ok']])
    assert.deepEqual(bytesOfJson(list), Buffer.from(JSON.stringify(list)), JSON.stringify(list));
  const char = fc.oneof(
    fc.constantFrom('"', '\\', '\u0000', '\u001f', ' ', '~', '\u007f', '\u0080', 'é', '😀', '\ud800', '\udc00'),
    fc.string({ minLength: 1, maxLength: 1 }),
  );
  fc.assert(
    fc.property(
      fc.array(
        fc.array(char, { maxLength: 30 }).map((cs) => cs.join('')),
        { maxLength: 12 },
      ),
      (list) => {
        assert.deepEqual(bytesOfJson(list), Buffer.from(JSON.stringify(list)));
      },
    ),
    { numRuns: 3000 },
  );
});

test('isoAt equals toISOString for every message of sent times spanning the whole range (fast-check)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: MIN - 1e12, max: MAX + 1e12 }), { minLength: 1, maxLength: 40 }),
      (values) => {
        const sorted = Float64Array.from(values.sort((a, b) => b - a));
        const times = encodeSentTimes(sorted);
        for (let o = 0; o < sorted.length; o++) {
          assert.equal(
            written((w) => w.isoAt(times, o)),
            new Date(sorted[o]).toISOString(),
          );
        }
      },
    ),
    { numRuns: 3000 },
  );
});

test('isoAt reads a near block from its base past 2^31 s, and a far block its instants whole', () => {
  // a block of two seconds in 2070 (its base 3.1e9 s: above 2^31), then a far block 100 years apart
  const sorted = Float64Array.of(
    ...Array.from({ length: SENT_BLOCK }, (_, k) => Date.UTC(2070, 5, 1, 12, 30, 15, 999) - (k % 2) * 1001),
    Date.UTC(2070, 5, 1),
    Date.UTC(1970, 0, 1, 0, 0, 1, 7),
  );
  const times = encodeSentTimes(sorted);
  assert.ok(times.msgSentBlock[0] > 2 ** 31);
  assert.ok(Number.isNaN(times.msgSentBlock[1]), 'the second block is far');
  const expected = ['2070-06-01T12:30:15.999Z', '2070-06-01T12:30:14.998Z'];
  for (let o = 0; o < SENT_BLOCK; o++)
    assert.equal(
      written((w) => w.isoAt(times, o)),
      expected[o % 2],
    );
  assert.equal(
    written((w) => w.isoAt(times, SENT_BLOCK)),
    '2070-06-01T00:00:00.000Z',
  );
  assert.equal(
    written((w) => w.isoAt(times, SENT_BLOCK + 1)),
    '1970-01-01T00:00:01.007Z',
  );
});
