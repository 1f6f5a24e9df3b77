/**
 * The posting starts (src/index/post-starts.ts) give back every start exactly, from the high bits
 * of the entry words in blocks whose span fits them, and whole in "far" blocks that do not. The
 * rank fields below them are left as they were. The widths follow the message count (rankBits), so
 * far blocks are built here by hand, for small and large organizations.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { noInbound, rankMask } from '../../../src/index/layout.js';
import {
  decodeSeparatePostStarts,
  encodePostStarts,
  MAX_MESSAGES,
  POST_BLOCK_SHIFT,
  postStart,
  postStartsFit,
  rankBits,
} from '../../../src/index/post-starts.js';
import { encodeSeparatePostStarts } from '../../helpers/separate-post-starts.js';

const BLOCK = 1 << POST_BLOCK_SHIFT;

/** Non-decreasing starts from the gaps (the postings of each entry), closed by the total. */
function startsOf(gaps: number[]): Uint32Array {
  const starts = new Uint32Array(gaps.length + 1);
  for (let e = 0; e < gaps.length; e++) starts[e + 1] = starts[e] + gaps[e];
  return starts;
}

/** Rank fields of an organization of `messages` messages: ordinals and noInbound ones, mixed. */
function fieldsOf(n: number, messages: number): Uint32Array {
  const words = new Uint32Array(n);
  for (let e = 0; e < n; e++) {
    const o = (e * 7919) % Math.max(1, messages);
    words[e] = e === n - 1 ? rankMask(messages) : e % 3 === 0 ? noInbound(messages) | o : o;
  }
  return words;
}

function assertRoundTrip(starts: Uint32Array, messages: number): { farBlocks: number; farLength: number } {
  const fields = fieldsOf(starts.length, messages);
  const words = fields.slice();
  const encoded = { ...encodePostStarts(starts, words, messages), entryNewestIn: words, messageCount: messages };
  for (let e = 0; e < starts.length; e++) {
    assert.equal(postStart(encoded, e), starts[e], `entry ${e} of ${starts.length - 1}`);
    assert.equal(words[e] & rankMask(messages), fields[e], `entry ${e}'s rank field`);
  }
  assert.ok(postStartsFit(encoded, starts.length - 1, starts[starts.length - 1]));
  return {
    farBlocks: [...encoded.entryPostBase].filter((b) => b < 0).length,
    farLength: encoded.entryPostFar.length,
  };
}

describe('post starts', () => {
  it('puts the rank field under the distance: 21 bits at 1M messages, 25 at 10M', () => {
    assert.equal(rankBits(1_000_000), 21);
    assert.equal(rankBits(10_000_000), 25);
    assert.equal(rankBits(0), 1);
    assert.equal(noInbound(1_000_000), 1 << 20);
    assert.ok(noInbound(1_000_000) > 1_000_000);
    assert.equal(noInbound(1 << 20), 1 << 21);
    assert.equal(rankMask(1_000_000), (1 << 21) - 1);
    assert.equal(rankMask(MAX_MESSAGES), 0x7fffffff);
  });

  it('keeps small entries in the words, with no far block', () => {
    const starts = startsOf(Array.from({ length: 1000 }, (_, e) => 1 + (e % 17)));
    const x = assertRoundTrip(starts, 1_000_000);
    assert.equal(x.farLength, 0);
  });

  it('keeps a block whole when its span passes what the words hold, and only that block', () => {
    const messages = 1_000_000; // 11 bits of distance: 2,047
    const gaps = Array.from({ length: 5 * BLOCK + 7 }, () => 3);
    gaps[2 * BLOCK + 5] = 3000; // one large entry in block 2
    gaps[5 * BLOCK + 6] = 2048; // and in the last, partial block (its closing start)
    const starts = startsOf(gaps);
    const x = assertRoundTrip(starts, messages);
    assert.equal(x.farBlocks, 2);
    assert.equal(x.farLength, BLOCK + (starts.length - 5 * BLOCK));
  });

  it('a span of exactly the largest distance stays in the block', () => {
    const messages = 1_000_000;
    const gaps = Array.from({ length: BLOCK }, () => 0);
    gaps[0] = 0xffffffff >>> rankBits(messages); // 2,047
    assert.equal(assertRoundTrip(startsOf(gaps), messages).farLength, 0);
    gaps[0]++;
    assert.equal(assertRoundTrip(startsOf(gaps), messages).farLength, BLOCK);
  });

  it('round-trips any gaps for any message count (fast-check)', () => {
    const seed = Date.now() % 1_000_000;
    console.log(`post starts: fast-check seed ${seed}`);
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.nat(40), fc.integer({ min: 0, max: 200_000 })), { minLength: 0, maxLength: 600 }),
        fc.oneof(fc.nat(100), fc.integer({ min: 0, max: MAX_MESSAGES })),
        (gaps, messages) => {
          assertRoundTrip(startsOf(gaps), messages);
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  it('refuses shapes a query could not read: short words, a start that goes down, a far block past its column', () => {
    const messages = 1000;
    const starts = startsOf(Array.from({ length: 3 * BLOCK }, (_, e) => (e === BLOCK ? 3_000_000 : 2)));
    const words = fieldsOf(starts.length, messages);
    const x = { ...encodePostStarts(starts, words, messages), entryNewestIn: words, messageCount: messages };
    const total = starts[starts.length - 1];
    assert.ok(x.entryPostFar.length > 0, 'a far block (over 2^21 postings at 1,000 messages)');
    assert.ok(postStartsFit(x, starts.length - 1, total));
    assert.ok(!postStartsFit(x, starts.length - 1, total + 1), 'the end is not the postings length');
    assert.ok(!postStartsFit({ ...x, entryNewestIn: words.subarray(1) }, starts.length - 1, total), 'short words');
    assert.ok(!postStartsFit({ ...x, entryPostFar: x.entryPostFar.subarray(1) }, starts.length - 1, total), 'far');
    const down = words.slice();
    down[3] = (down[3] & rankMask(messages)) | (0x3ff << rankBits(messages));
    assert.ok(!postStartsFit({ ...x, entryNewestIn: down }, starts.length - 1, total), 'a start going down');
  });

  it('refuses more postings or messages than the layout holds, naming the figure', () => {
    assert.throws(
      () => encodePostStarts(Uint32Array.of(0, 0x80000000), new Uint32Array(2), 10),
      /2147483648 postings in one organization/,
    );
    assert.throws(
      () => encodePostStarts(Uint32Array.of(0, 1), new Uint32Array(2), 2 ** 30),
      /1073741824 messages in one organization/,
    );
  });

  it('reads back the previous layout (a column of distances, blocks of 64) for the loader', () => {
    const starts = startsOf(Array.from({ length: 200 }, (_, e) => (e === 70 ? 70_000 : e % 5)));
    const { base, offsets, far } = encodeSeparatePostStarts(starts);
    assert.ok(far.length > 0, 'a far block in the previous layout');
    assert.deepEqual(decodeSeparatePostStarts(base, offsets, far, starts.length), starts);
    assert.equal(decodeSeparatePostStarts(base, offsets, far.subarray(1), starts.length), null);
    assert.equal(decodeSeparatePostStarts(base, offsets.subarray(1), far, starts.length), null);
  });
});
