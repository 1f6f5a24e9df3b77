/** Sent times (src/index/sent-times.ts): three words a message give back every instant, its ties and its order. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeSentTimes,
  encodeSentTimes,
  firstSentBefore,
  sameSentAt,
  sentAtOf,
  sentTimesFit,
} from '../../../src/index/sent-times.js';
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
      fc.property(fc.array(instant, { maxLength: 60 }), (values) => {
        const ms = descending(values);
        const x = encodeSentTimes(ms);
        assert.deepEqual(decodeSentTimes(x), ms);
        assert.ok(sentTimesFit(x, ms.length));
        const ranks = timeRanks(x);
        for (let o = 0; o < ms.length; o++) {
          assert.equal(sentAtOf(x, o), ms[o]);
          if (o > 0) assert.equal(sameSentAt(x, o, o - 1), ms[o] === ms[o - 1]);
          assert.equal(ranks[o], ms.indexOf(ms[o]));
          assert.equal(timeRank(x, o), ranks[o]);
        }
      }),
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
        fc.array(fc.integer({ min: 1_699_999_990_000, max: 1_700_000_010_000 }), { maxLength: 40 }),
        fc.integer({ min: 1_699_999_980_000, max: 1_700_000_020_000 }),
        fc.boolean(),
        (values, bound, wide) => {
          if (wide) values.push(Date.UTC(2200, 0, 1)); // the high column in use
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

  it('take three words a message, and a high column only past 136 years', () => {
    const x = encodeSentTimes(descending([1_700_000_000_123, 1_600_000_000_000, 0]));
    assert.deepEqual([...x.msgSentBase], [0]);
    assert.equal(x.msgSentWords.length, 9);
    // 1_700_000_000 seconds = 25939 * 65536 + 61696, then 123 ms
    assert.deepEqual([...x.msgSentWords.subarray(0, 3)], [61696, 25939, 123]);
    assert.equal(x.msgSentHigh.length, 0);
    const wide = encodeSentTimes(descending([Date.UTC(2174, 0, 1), Date.UTC(2024, 0, 1)]));
    assert.equal(wide.msgSentHigh.length, 2);
    assert.equal(encodeSentTimes(new Float64Array(0)).msgSentWords.length, 0);
  });

  it('refuse an instant that is not an integer', () => {
    assert.throws(() => encodeSentTimes(Float64Array.of(1.5)), /message 0 has no integer instant/);
    assert.throws(() => encodeSentTimes(Float64Array.of(0, Number.NaN)), /message 1 has no integer instant/);
  });

  it('do not fit when a length, the base, a millisecond or the order is wrong', () => {
    const good = () => encodeSentTimes(descending([1_700_000_000_123, 1_700_000_000_001, 1_600_000_000_000]));
    assert.ok(sentTimesFit(good(), 3));
    assert.equal(sentTimesFit(good(), 4), false);
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
      assert.equal(sentTimesFit(x, 3), false, String(change));
    }
    assert.equal(sentTimesFit({ ...good(), msgSentWords: new Uint16Array(8) }, 3), false);
    assert.equal(sentTimesFit({ ...good(), msgSentHigh: new Uint16Array(1) }, 3), false);
    assert.equal(sentTimesFit({ ...good(), msgSentBase: new Float64Array(2) }, 3), false);
  });
});
