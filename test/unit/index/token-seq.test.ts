/**
 * Token sequences as varints of frequency ranks (src/index/token-seq.ts): a phrase found in the
 * bytes at a token boundary is exactly a contiguous run of the ids, for ranks of 1, 2 and 3 bytes
 * (the property tests' small vocabularies only reach 1-byte ranks).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import {
  containsTokens,
  encodePhrase,
  encodeTokenSeq as encodeBlocks,
  frequencyRanks,
  messageTokenIds,
  seqStart,
} from '../../../src/index/token-seq.js';
import { testSeed } from '../../helpers/seed.js';

const SEED = testSeed('TOKEN_SEQ_SEED', 'test/unit/index/token-seq.test.ts');

/** encodeTokenSeq, with its starts (kept in blocks: block-starts.ts) also whole, as these tests read them. */
function encodeTokenSeq(seq: Uint32Array, tokenStart: Uint32Array, rank: Uint32Array) {
  const e = encodeBlocks(seq, tokenStart, rank);
  return { ...e, seqByteStart: Uint32Array.from({ length: tokenStart.length }, (_, m) => seqStart(e, m)) };
}

function containsIds(seq: number[], phrase: number[]): boolean {
  outer: for (let s = 0; s + phrase.length <= seq.length; s++) {
    for (let k = 0; k < phrase.length; k++) if (seq[s + k] !== phrase[k]) continue outer;
    return true;
  }
  return false;
}

/**
 * Encodes `messages` (token ids, rank = id through `rank`) and checks containsTokens on each
 * against containsIds; returns the encoding for further checks.
 */
function checkPhrase(messages: number[][], phrase: number[], rank: Uint32Array) {
  const seq = Uint32Array.from(messages.flat());
  const seqStart = new Uint32Array(messages.length + 1);
  for (let m = 0; m < messages.length; m++) seqStart[m + 1] = seqStart[m] + messages[m].length;
  const encoded = encodeTokenSeq(seq, seqStart, rank);
  const pattern = encodePhrase(rank, phrase);
  for (let m = 0; m < messages.length; m++) {
    const found = containsTokens(encoded.tokenSeqBytes, encoded.seqByteStart[m], encoded.seqByteStart[m + 1], pattern);
    assert.equal(found, containsIds(messages[m], phrase), `message ${m} ${messages[m]} phrase ${phrase}`);
  }
  return encoded;
}

it('phrase in the bytes = contiguous run of the ids, ranks of 1-3 bytes; decoding gives the ids back', () => {
  // Ranks given directly (rank = id), drawn where a multi-byte varint's later bytes equal a
  // one-byte token (rank 128-800 ends in byte 1-6, 16,384+ in 1), so a match that ignored token
  // boundaries would be caught.
  const vocabulary = 20_000;
  const rank = Uint32Array.from({ length: vocabulary }, (_, t) => t);
  const id = fc.oneof(
    fc.integer({ min: 0, max: 6 }),
    fc.integer({ min: 128, max: 800 }),
    fc.integer({ min: 16_384, max: 16_900 }),
    fc.integer({ min: 0, max: vocabulary - 1 }),
  );
  fc.assert(
    fc.property(
      fc.array(fc.array(id, { maxLength: 12 }), { minLength: 1, maxLength: 6 }),
      fc.array(id, { minLength: 1, maxLength: 3 }),
      (messages, phrase) => {
        const encoded = checkPhrase(messages, phrase, rank);
        for (let m = 0; m < messages.length; m++)
          assert.deepEqual(messageTokenIds({ ...encoded, tokenRank: rank }, m), messages[m]);
      },
    ),
    { seed: SEED, numRuns: 2000 },
  );
});

it('repetitive messages and phrases (the scan hands over to Knuth-Morris-Pratt) agree with the ids', () => {
  // "de de de ... fim" against "de de ... de": the direct scan compares ~the phrase's length at
  // every position and goes over its budget, so the second algorithm answers; ranks of 1 and 2
  // bytes (1 and 129 end in the same byte), boundaries included
  const rank = Uint32Array.from({ length: 200 }, (_, t) => t);
  const id = fc.constantFrom(0, 1, 129);
  const run = (token: fc.Arbitrary<number>, max: number) =>
    fc.tuple(token, fc.integer({ min: 1, max })).map(([t, n]) => Array<number>(n).fill(t));
  const text = fc.array(fc.oneof(run(id, 80), fc.array(id, { maxLength: 4 })), { minLength: 1, maxLength: 8 });
  fc.assert(
    fc.property(
      fc.array(text, { minLength: 1, maxLength: 3 }),
      text.filter((p) => p.flat().length > 0),
      (messages, phraseParts) => {
        checkPhrase(
          messages.map((m) => m.flat()),
          phraseParts.flat().slice(0, 60),
          rank,
        );
      },
    ),
    { seed: SEED, numRuns: 1500 },
  );
  // the case: 300k times "de" then "fim", phrase 70 times "de" then "fim" (found) and 70
  // times "de" then "fim" then "de" (not found): linear, a few ms
  const long = Uint32Array.from([...Array<number>(300_000).fill(1), 129]);
  const { seqByteStart, tokenSeqBytes } = encodeTokenSeq(long, Uint32Array.from([0, long.length]), rank);
  const has = (ids: number[]) =>
    containsTokens(tokenSeqBytes, seqByteStart[0], seqByteStart[1], encodePhrase(rank, ids));
  assert.equal(has([...Array<number>(70).fill(1), 129]), true);
  assert.equal(has([...Array<number>(70).fill(1), 129, 1]), false);
});

it('a token is never found inside a longer one: rank 1 is not the last byte of rank 129 or 16,385', () => {
  const rank = Uint32Array.from({ length: 20_000 }, (_, t) => t);
  const seq = Uint32Array.from([129, 16_385, 129, 1]);
  const { seqByteStart, tokenSeqBytes } = encodeTokenSeq(seq, Uint32Array.from([0, 1, 2, 4]), rank);
  const has = (m: number, ids: number[]) =>
    containsTokens(tokenSeqBytes, seqByteStart[m], seqByteStart[m + 1], encodePhrase(rank, ids));
  assert.equal(has(0, [1]), false);
  assert.equal(has(1, [1]), false);
  assert.equal(has(1, [0]), false);
  assert.equal(has(2, [1]), true);
  assert.equal(has(2, [129, 1]), true);
  assert.equal(has(2, [1, 129]), false);
});

it('ranks follow frequency: the commonest token is written in one byte', () => {
  const seq = Uint32Array.from([7, 7, 7, 3, 3, 9]);
  const rank = frequencyRanks(seq, 10);
  assert.equal(rank[7], 0);
  assert.equal(rank[3], 1);
  assert.equal(rank[9], 2);
  assert.equal(encodePhrase(rank, [7]).length, 1);
});

it('long messages (the native anchor search and its hand-backs) agree with the ids, whatever the anchor', () => {
  // Messages of 600-3,000 tokens, past the probe: a rare token among runs of frequent ones
  // (sparse anchors: the native search), or tokens drawn evenly (dense: back to the scan), ranks
  // of 1-3 bytes whose later bytes equal one-byte tokens. Every token start of the phrase as the
  // anchor must give the same answer as the rarest one.
  const rank = Uint32Array.from({ length: 20_000 }, (_, t) => t);
  const common = fc.constantFrom<number>(0, 1, 2, 129);
  const rare = fc.constantFrom<number>(300, 16_385, 5, 16_500);
  // common tokens past the probe, then a part where the rare ones are sparse or dense, then more
  const message = fc
    .tuple(
      fc.array(common, { minLength: 520, maxLength: 700 }),
      fc.oneof(
        fc.array(fc.oneof(common, common, common, rare), { minLength: 1, maxLength: 400 }),
        fc.array(fc.oneof(common, rare), { minLength: 1, maxLength: 800 }),
        fc.array(rare, { maxLength: 3 }),
      ),
      fc.array(common, { minLength: 400, maxLength: 700 }),
    )
    .map(([a, b, c]) => [...a, ...b, ...c]);
  fc.assert(
    fc.property(
      fc.array(message, { minLength: 1, maxLength: 3 }),
      fc.array(fc.oneof(common, rare), { minLength: 1, maxLength: 6 }),
      fc.nat(),
      (messages, phrase, pick) => {
        // most phrases are cut from a message where its rare tokens are, so that matches happen
        const source = messages[pick % messages.length];
        let at = source.findIndex((t, i) => i >= 500 && t >= 300);
        if (at < 0) at = 500 + (pick % 200);
        at = Math.max(0, at - (pick % 4));
        const p = pick % 4 === 3 ? phrase : source.slice(at, at + 1 + (pick % 6));
        if (p.length === 0) return;
        const { seqByteStart, tokenSeqBytes } = checkPhrase(messages, p, rank);
        const pattern = encodePhrase(rank, p);
        const starts: number[] = [];
        for (let b = 0; b < pattern.length; b++) if (b === 0 || pattern[b - 1] < 0x80) starts.push(b);
        for (let m = 0; m < messages.length; m++) {
          const want = containsTokens(tokenSeqBytes, seqByteStart[m], seqByteStart[m + 1], pattern);
          for (const b of starts)
            assert.equal(
              containsTokens(tokenSeqBytes, seqByteStart[m], seqByteStart[m + 1], pattern, b),
              want,
              `anchor at byte ${b}`,
            );
        }
      },
    ),
    { seed: SEED, numRuns: 200 },
  );
  // the seams, one by one: a match at the very first start the native search tries (the probe's
  // end), and anchors that turn dense after it (back to the scan), found and not found after that
  const one = (text: number[], ids: number[]) => {
    const e = encodeTokenSeq(Uint32Array.from(text), Uint32Array.from([0, text.length]), rank);
    return containsTokens(e.tokenSeqBytes, 0, e.seqByteStart[1], encodePhrase(rank, ids));
  };
  assert.equal(one([...Array<number>(512).fill(0), 300, 7, ...Array<number>(600).fill(0)], [300, 7]), true);
  assert.equal(one([...Array<number>(511).fill(0), 300, 7, ...Array<number>(600).fill(0)], [300, 7]), true);
  const dense = [...Array<number>(600).fill(0), ...Array.from({ length: 400 }, (_, i) => (i % 2 ? 0 : 300))];
  assert.equal(one([...dense, ...Array<number>(600).fill(0)], [300, 1]), false);
  assert.equal(one([...dense, ...Array<number>(600).fill(0)], [300, 0, 0, 0]), true);
  assert.equal(one([...dense, 300, 1, ...Array<number>(600).fill(0)], [300, 1]), true);
  // the audit's case: "o o ... a o o ..." against phrases of "o" and "a" that never match, and one that does
  const rank2 = Uint32Array.from({ length: 4 }, (_, t) => t);
  const text = [...Array<number>(5000).fill(0), 1, ...Array<number>(5000).fill(0)];
  const { seqByteStart, tokenSeqBytes } = encodeTokenSeq(
    Uint32Array.from(text),
    Uint32Array.from([0, text.length]),
    rank2,
  );
  const has = (ids: number[]) =>
    containsTokens(tokenSeqBytes, seqByteStart[0], seqByteStart[1], encodePhrase(rank2, ids));
  for (let k = 1; k <= 10; k++) assert.equal(has([...Array<number>(k).fill(0), 1, 0, 1]), false);
  assert.equal(has([0, 0, 1, 0, 0]), true);
  assert.equal(has([1, 0, 0]), true);
  assert.equal(has([0, 1, 1]), false);
});
