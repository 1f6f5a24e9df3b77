/**
 * The 2-byte posting starts (src/index/post-starts.ts) give back every start exactly, in blocks
 * whose starts fit a Uint16 span and in "far" blocks that do not (an entry of a contact with more
 * than 65,535 messages of one token: absent from generated data, so built here by hand).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { encodePostStarts, POST_BLOCK_SHIFT, postStart } from '../../../src/index/post-starts.js';

const BLOCK = 1 << POST_BLOCK_SHIFT;

/** Non-decreasing starts from the gaps (the postings of each entry), closed by the total. */
function startsOf(gaps: number[]): Uint32Array {
  const starts = new Uint32Array(gaps.length + 1);
  for (let e = 0; e < gaps.length; e++) starts[e + 1] = starts[e] + gaps[e];
  return starts;
}

function assertRoundTrip(starts: Uint32Array): void {
  const encoded = encodePostStarts(starts);
  for (let e = 0; e < starts.length; e++) {
    assert.equal(postStart(encoded, e), starts[e], `entry ${e} of ${starts.length - 1}`);
  }
}

describe('post starts', () => {
  it('encodes small entries in 2 bytes an entry, with no far block', () => {
    const starts = startsOf(Array.from({ length: 1000 }, (_, e) => 1 + (e % 17)));
    const encoded = encodePostStarts(starts);
    assert.equal(encoded.entryPostFar.length, 0);
    assert.equal(encoded.entryPostOffset.length, starts.length);
    assert.equal(encoded.entryPostBase.length, Math.ceil(starts.length / BLOCK));
    assertRoundTrip(starts);
  });

  it('keeps a block whole when its span passes 65,535, and only that block', () => {
    const gaps = Array.from({ length: 5 * BLOCK + 7 }, () => 3);
    gaps[2 * BLOCK + 5] = 70_000; // one huge entry in block 2
    gaps[5 * BLOCK + 6] = 0xffff + 1; // and in the last, partial block (its closing start)
    const starts = startsOf(gaps);
    const encoded = encodePostStarts(starts);
    const far = [...encoded.entryPostBase].filter((b) => b < 0).length;
    assert.equal(far, 2);
    assert.equal(encoded.entryPostFar.length, BLOCK + (starts.length - 5 * BLOCK));
    assertRoundTrip(starts);
  });

  it('a span of exactly 65,535 stays in the block', () => {
    const gaps = Array.from({ length: BLOCK }, () => 0);
    gaps[0] = 0xffff;
    const starts = startsOf(gaps); // block 0 spans starts[0] .. starts[63] = 65,535
    assert.equal(encodePostStarts(starts).entryPostFar.length, 0);
    assertRoundTrip(starts);
  });

  it('round-trips any gaps (fast-check)', () => {
    const seed = Date.now() % 1_000_000;
    console.log(`post starts: fast-check seed ${seed}`);
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.nat(40), fc.integer({ min: 0, max: 200_000 })), { minLength: 0, maxLength: 600 }),
        (gaps) => assertRoundTrip(startsOf(gaps)),
      ),
      { seed, numRuns: 300 },
    );
  });

  it('refuses more postings than the layout holds, naming the figure', () => {
    assert.throws(() => encodePostStarts(Uint32Array.of(0, 0x80000000)), /2147483648 postings in one organization/);
  });
});
