/** Sent times (src/index/sent-times.ts): a word a message and a base a block give back every instant, its ties and its order. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeSentTimes,
  encodeSentTimes,
  firstSentBefore,
  sameSentAt,
  sentAtOf,
  SENT_BLOCK,
  sentTimesFit,
} from '../../../src/index/sent-times.js';
import { decodeWordSentTimes } from '../../../src/index/sent-times-words.js';
import { encodeWordSentTimes } from '../../helpers/word-sent-times.js';
import { timeRank, timeRanks } from '../../../src/index/layout.js';

const MAX = 8.64e15; // a Date's range

/** Non-increasing, as an index orders them. */
const descending = (a: number[]): Float64Array => Float64Array.from(a.sort((x, y) => y - x));

describe('sent times', () => {
  it('give back every instant, ties and order, of any integer instants a Date holds', () => {
    const instant = fc.oneof(
      fc.integer({ min: -MAX, max: MAX }),
      fc.integer({ min: 1_600_000_000, max: 1_800_000_000 }).map((s) => s * 1000),
      fc.integer({ min: 1_700_000_000_000, max: 1_700_000_100_000 }),
    );
    fc.assert(
      // up to 3 blocks of 64: times anywhere (far blocks), times within minutes (near ones) and mixed
      fc.property(
        fc.oneof(
          fc.array(instant, { maxLength: 3 * SENT_BLOCK + 5, size: 'max' }),
          fc.array(fc.integer({ min: 1_700_000_000_000, max: 1_700_000_600_000 }), {
            maxLength: 3 * SENT_BLOCK + 5,
            size: 'max',
          }),
          fc
            .tuple(
              fc.array(fc.integer({ min: 1_700_000_000_000, max: 1_700_000_600_000 }), {
                maxLength: 2 * SENT_BLOCK,
                size: 'max',
              }),
              fc.array(instant, { maxLength: 3 }),
            )
            .map(([a, b]) => [...a, ...b]),
        ),
        (values) => {
          const ms = descending(values);
          const x = encodeSentTimes(ms);
          assert.deepEqual(decodeSentTimes(x), ms);
          assert.ok(sentTimesFit(x, ms.length));
          const ranks = timeRanks(x);
          for (let o = 0; o < ms.length; o++) {
            assert.equal(sentAtOf(x, o), ms[o]);
            if (o > 0) assert.equal(sameSentAt(x, o, o - 1), ms[o] === ms[o - 1]);
            // across blocks too
            const p = (o * 37) % ms.length;
            assert.equal(sameSentAt(x, o, p), ms[o] === ms[p]);
            assert.equal(ranks[o], ms.indexOf(ms[o]));
            assert.equal(timeRank(x, o), ranks[o]);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('rank long ties at their first ordinal (timeRank gallops back, then searches)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -5, max: 5 }), fc.integer({ min: 1, max: 300 })), { maxLength: 12 }),
        (runs) => {
          // runs of equal times, each a second, a millisecond or 2^32 s apart from the last
          const values: number[] = [];
          let t = 1_700_000_000_000;
          for (const [gap, length] of runs) {
            t += gap === 5 ? 2 ** 32 * 1000 : gap >= 0 ? gap * 1000 + 1 : gap;
            for (let k = 0; k < length; k++) values.push(t);
          }
          const x = encodeSentTimes(descending(values));
          const ranks = timeRanks(x);
          for (let o = 0; o < values.length; o++) assert.equal(timeRank(x, o), ranks[o]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('find the first message sent before an instant, or at it too (the date window)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1_699_999_990_000, max: 1_700_000_010_000 }), {
          maxLength: 3 * SENT_BLOCK,
          size: 'max',
        }),
        fc.integer({ min: 1_699_999_980_000, max: 1_700_000_020_000 }),
        fc.boolean(),
        (values, bound, wide) => {
          if (wide) values.push(Date.UTC(2200, 0, 1)); // a far block
          const ms = descending(values);
          const x = encodeSentTimes(ms);
          // every instant itself as a bound too, and one either side
          for (const b of [bound, ...ms, ...Array.from(ms, (t) => t - 1), ...Array.from(ms, (t) => t + 1)]) {
            const before = ms.findIndex((t) => t < b);
            const atOrBefore = ms.findIndex((t) => t <= b);
            assert.equal(firstSentBefore(x, b, false), before < 0 ? ms.length : before);
            assert.equal(firstSentBefore(x, b, true), atOrBefore < 0 ? ms.length : atOrBefore);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('take a word a message and a base a block, and a far block its instants whole', () => {
    // block 0: 64 messages a second apart, from 1_700_000_000.123 s; block 1: 48 days and more apart
    const near = Array.from({ length: SENT_BLOCK }, (_, k) => 1_700_000_000_123 + 1000 * (SENT_BLOCK - 1 - k));
    const x = encodeSentTimes(descending([...near, 1_600_000_000_000, 0]));
    assert.equal(x.msgSentBlock.length, 2);
    assert.equal(x.msgSentBlock[0], 1_700_000_000);
    assert.equal(x.msgSentLow.length, SENT_BLOCK + 2);
    // the newest: 63 seconds after the base, then 123 ms
    assert.equal(x.msgSentLow[0], (63 << 10) | 123);
    assert.equal(x.msgSentLow[SENT_BLOCK - 1], 123);
    assert.ok(Number.isNaN(x.msgSentBlock[1]), 'a span of 2^22 s or more is far');
    assert.deepEqual([...x.msgSentFar], [1_600_000_000_000, 0]);
    assert.deepEqual([...x.msgSentLow.subarray(SENT_BLOCK)], [0, 1]);
    // 2^22 - 1 seconds apart still fit a word, 2^22 do not
    const edge = (span: number) => encodeSentTimes(descending([(1_000_000 + span) * 1000 + 999, 1_000_000_000]));
    assert.equal(edge(2 ** 22 - 1).msgSentFar.length, 0);
    assert.equal(edge(2 ** 22).msgSentFar.length, 2);
    const empty = encodeSentTimes(new Float64Array(0));
    assert.equal(empty.msgSentLow.length + empty.msgSentBlock.length + empty.msgSentFar.length, 0);
  });

  it('refuse an instant that is not an integer', () => {
    assert.throws(() => encodeSentTimes(Float64Array.of(1.5)), /message 0 has no integer instant/);
    assert.throws(() => encodeSentTimes(Float64Array.of(0, Number.NaN)), /message 1 has no integer instant/);
  });

  it('do not fit when a length, a base, a millisecond, a far position or the order is wrong', () => {
    // a near block (64 messages a millisecond apart) then a far one
    const near = Array.from({ length: SENT_BLOCK }, (_, k) => 1_700_000_000_123 + 1001 * (SENT_BLOCK - 1 - k));
    const good = () => encodeSentTimes(descending([...near, 1_600_000_000_000, 0]));
    assert.ok(sentTimesFit(good(), SENT_BLOCK + 2));
    assert.equal(sentTimesFit(good(), SENT_BLOCK + 3), false);
    const cases: Array<(x: ReturnType<typeof good>) => unknown> = [
      (x) => (x.msgSentLow[5] = (x.msgSentLow[5] & ~1023) | 1000), // a millisecond of 1000
      (x) => (x.msgSentBlock[0] = 0.5),
      (x) => (x.msgSentBlock[0] = Number.POSITIVE_INFINITY),
      (x) => (x.msgSentLow[7] = x.msgSentLow[6] + 1), // goes up within a block
      (x) => (x.msgSentBlock[0] = 1_500_000_000), // the near block now older than the far one
      (x) => (x.msgSentFar[0] = 1_800_000_000_000), // the far block newer than the near one
      (x) => (x.msgSentFar[1] = 1_700_000_000_000), // goes up within the far block
      (x) => (x.msgSentFar[1] = 0.5),
      (x) => (x.msgSentLow[SENT_BLOCK + 1] = 2), // a far position past msgSentFar
      (x) => (x.msgSentBlock[1] = 0), // a far block read as near
    ];
    for (const change of cases) {
      const x = good();
      change(x);
      assert.equal(sentTimesFit(x, SENT_BLOCK + 2), false, String(change));
    }
    assert.equal(sentTimesFit({ ...good(), msgSentLow: new Uint32Array(SENT_BLOCK + 3) }, SENT_BLOCK + 2), false);
    assert.equal(sentTimesFit({ ...good(), msgSentBlock: new Float64Array(3) }, SENT_BLOCK + 2), false);
    // past a Date's range
    const late = encodeSentTimes(Float64Array.of(8.64e15, 8.64e15 - 1));
    assert.ok(sentTimesFit(late, 2));
    late.msgSentBlock[0] += 1;
    assert.equal(sentTimesFit(late, 2), false);
  });
});

describe('sent times of the layout before blocks (three words a message)', () => {
  it('decode to the instants they were written from, high column or not', () => {
    const instant = fc.oneof(
      fc.integer({ min: -MAX, max: MAX }),
      fc.integer({ min: 1_700_000_000_000, max: 1_700_000_100_000 }),
    );
    fc.assert(
      fc.property(fc.array(instant, { maxLength: 80 }), (values) => {
        const ms = descending(values);
        assert.deepEqual(decodeWordSentTimes(encodeWordSentTimes(ms), ms.length), ms);
      }),
      { numRuns: 1000 },
    );
  });

  it('are refused (null) when a length, the base, a millisecond or the order is wrong', () => {
    const good = () => encodeWordSentTimes(descending([1_700_000_000_123, 1_700_000_000_001, 1_600_000_000_000]));
    assert.notEqual(decodeWordSentTimes(good(), 3), null);
    assert.equal(decodeWordSentTimes(good(), 4), null);
    const cases: Array<(x: ReturnType<typeof good>) => unknown> = [
      (x) => (x.msgSentWords[3 + 2] = 1000),
      (x) => (x.msgSentBase[0] = 0.5),
      (x) => (x.msgSentBase[0] = Number.NaN),
      (x) => (x.msgSentWords[6 + 1] = x.msgSentWords[1] + 1), // goes up
      (x) => (x.msgSentBase[0] = 8.64e12), // past a Date's range
    ];
    for (const change of cases) {
      const x = good();
      change(x);
      assert.equal(decodeWordSentTimes(x, 3), null, String(change));
    }
    assert.equal(decodeWordSentTimes({ ...good(), msgSentWords: new Uint16Array(8) }, 3), null);
    assert.equal(decodeWordSentTimes({ ...good(), msgSentHigh: new Uint16Array(1) }, 3), null);
    assert.equal(decodeWordSentTimes({ ...good(), msgSentBase: new Float64Array(2) }, 3), null);
  });
});
