/**
 * The msgpack walker a server's load uses to step over contact records: every value msgpackr
 * writes ends where the walker says, a contacts part is read as its decoded form is, and cut or
 * malformed bytes are refused rather than read past.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { contactsPartAt, skipValue } from '../../../src/store/msgpack-skip.js';

// the snapshot encoder's options (snapshot-format.ts)
const packr = new Packr({ useRecords: false });

const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
    fc.maxSafeInteger(),
    fc.double({ noNaN: true }),
    fc.boolean(),
    fc.constant(null),
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  ),
  node: fc.oneof(
    { depthSize: 'small' },
    tie('leaf'),
    fc.array(tie('node'), { maxLength: 20 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('node'), { maxKeys: 20 }),
  ),
})).node;

test('skipValue ends every value msgpackr writes where it ends', () => {
  fc.assert(
    fc.property(fc.array(value, { minLength: 1, maxLength: 5 }), (values) => {
      const encoded = values.map((v) => packr.pack(v));
      const all = Buffer.concat(encoded);
      let at = 0;
      for (const e of encoded) {
        const end = skipValue(all, at);
        assert.equal(end, at + e.length);
        at = end;
      }
    }),
    { numRuns: 500 },
  );
});

test('skipValue steps over long strings, binaries, arrays and maps (16- and 32-bit lengths)', () => {
  for (const v of [
    'x'.repeat(300),
    'y'.repeat(70_000),
    Buffer.alloc(70_000, 7),
    Array.from({ length: 70_000 }, (_, i) => i),
    Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, i])),
    new Map(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, null])),
    new Float64Array([1.5, 2.5]),
  ]) {
    const b = packr.pack(v);
    assert.equal(skipValue(b, 0), b.length);
  }
});

test('contactsPartAt reads a contacts part as decoding it would, and no other part', () => {
  const row = fc.tuple(
    fc.uuid(),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.option(fc.string({ maxLength: 16 })),
    fc.option(fc.string({ maxLength: 40 })),
    fc.option(fc.webUrl()),
    fc.constantFrom('whatsapp', 'instagram', 'telegram', 'email', 'manual'),
  );
  fc.assert(
    fc.property(fc.nat({ max: 2 ** 32 - 70_000 }), fc.array(row, { maxLength: 40 }), (start, rows) => {
      const other = packr.pack(['a', 'entryStart', 0, Buffer.from([1, 2, 3])]);
      const part = packr.pack(['c', start, rows]);
      const b = Buffer.concat([other, part, other]);
      assert.equal(contactsPartAt(b, 0), null);
      assert.deepEqual(contactsPartAt(b, other.length), { start, rows: rows.length, end: other.length + part.length });
    }),
    { numRuns: 300 },
  );
  // more than 15 and more than 65,535 rows (array 16 and array 32 headers)
  for (const n of [16, 70_000]) {
    const part = packr.pack(['c', 3, Array.from({ length: n }, () => ['id', 'n', null, null, null, 'email'])]);
    assert.deepEqual(contactsPartAt(part, 0), { start: 3, rows: n, end: part.length });
  }
});

test('cut or malformed bytes are refused, never read past', () => {
  const part = packr.pack(['c', 5, [['a', 'b', null, null, null, 'email']]]);
  for (let cut = 1; cut < part.length; cut++) {
    assert.throws(() => skipValue(part.subarray(0, cut), 0), RangeError, `cut at ${cut}`);
    assert.throws(() => contactsPartAt(part.subarray(0, cut), 0), RangeError, `cut at ${cut}`);
  }
  assert.throws(() => skipValue(Uint8Array.of(0xc1), 0), /0xc1/);
  assert.throws(() => contactsPartAt(packr.pack(['c', -1, []]), 0), /start/);
  assert.throws(() => contactsPartAt(packr.pack(['c', 'x', []]), 0), /start/);
  assert.throws(() => contactsPartAt(packr.pack(['c', 0, 'rows']), 0), /rows/);
});

test('an array or map longer than the part may hold is refused before it is read', () => {
  // array 32 of 400M empty arrays, as a review's chunk (its CRC right) claimed: the decoder
  // allocated until V8 aborted the process; the walk now refuses the claim at once
  const bomb = Buffer.alloc(5 + 1000, 0x90);
  bomb[0] = 0xdd;
  bomb.writeUInt32BE(400_000_000, 1);
  assert.throws(() => skipValue(bomb, 0, 20_000), /array or map of 400000000 elements at byte 1/);
  // more elements than bytes left: refused even without a bound
  assert.throws(() => skipValue(bomb, 0), /more than the part can hold/);
  const map = Buffer.from([0xde, 0x03, 0xe9, ...new Array(4000).fill(0xc0)]); // map 16 of 1,001 pairs
  assert.throws(() => skipValue(map, 0, 1000), /map of 1001 elements/);
  assert.equal(skipValue(map, 0, 1001), 3 + 2002);
  // a contacts part with more rows than the bound
  const rows = packr.pack(['c', 0, Array.from({ length: 30 }, () => ['id', null, null, null, null, null])]);
  assert.throws(() => contactsPartAt(rows, 0, 29), /array or map of 30 elements/);
  assert.equal(contactsPartAt(rows, 0, 30)!.rows, 30);
});
