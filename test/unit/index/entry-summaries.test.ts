/**
 * Long-entry summaries (src/index/entry-summaries.ts) against a brute-force count over random
 * entries, some with their first message inline: which entries get one, and each mode's count,
 * conversations and oldest ordinal.
 * Seed: PROPERTY_SEED (else Date.now()).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  buildEntrySummaries,
  SUMMARY_WIDTH,
  summaryAt,
  type SummarySource,
} from '../../../src/index/entry-summaries.js';
import {
  BOTH,
  CHANNEL_COUNT,
  HEAD_INLINE,
  INBOUND,
  NONE,
  noInbound,
  OUTBOUND,
  rankMask,
} from '../../../src/index/layout.js';
import { encodePostStarts } from '../../../src/index/post-starts.js';

const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : Date.now() % 2 ** 31;
console.log(`entry-summaries seed ${SEED} (reproduce: PROPERTY_SEED=${SEED})`);

const MESSAGES = 64;
const CONVERSATIONS = 6;

/** Random entries over MESSAGES messages: each entry an ascending set of ordinals. */
const sourceArb = fc
  .record({
    combos: fc.array(fc.integer({ min: 0, max: 2 * CHANNEL_COUNT - 1 }), {
      minLength: MESSAGES,
      maxLength: MESSAGES,
    }),
    conversations: fc.array(fc.integer({ min: 0, max: CONVERSATIONS - 1 }), {
      minLength: MESSAGES,
      maxLength: MESSAGES,
    }),
    entries: fc.array(fc.uniqueArray(fc.integer({ min: 0, max: MESSAGES - 1 }), { minLength: 1, maxLength: 12 }), {
      maxLength: 12,
    }),
    min: fc.integer({ min: 1, max: 6 }),
    // per entry: 0 its first message stored, 1 inline as a newest inbound, 2 inline without inbound
    heads: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 12, maxLength: 12 }),
  })
  .map(({ combos, conversations, entries, min, heads }) => {
    const lists = entries.map((l) => [...l].sort((a, b) => a - b));
    const entryFlags = new Uint16Array(lists.length);
    // the rank fields, then the starts above them (post-starts.ts), for MESSAGES messages
    const entryNewestIn = new Uint32Array(lists.length + 1).fill(rankMask(MESSAGES));
    const stored = lists.map((l, e) => {
      if (heads[e] === 0) return l;
      entryFlags[e] = HEAD_INLINE;
      entryNewestIn[e] = heads[e] === 1 ? l[0] : noInbound(MESSAGES) | l[0];
      return l.slice(1);
    });
    const starts = new Uint32Array(lists.length + 1);
    stored.forEach((l, e) => {
      starts[e + 1] = starts[e] + l.length;
    });
    const source: SummarySource = {
      ...encodePostStarts(starts, entryNewestIn, MESSAGES),
      messageCount: MESSAGES,
      entryCount: lists.length,
      entryFlags,
      entryNewestIn,
      storedPostings: Uint32Array.from(stored.flat()),
      msgCombo: Uint8Array.from(combos),
      msgConversation: Uint32Array.from(conversations),
      conversationCount: CONVERSATIONS,
    };
    return { source, lists, min };
  });

describe('entry summaries', () => {
  it('summarize exactly the entries of at least `min` postings, per mode, as a brute-force count', () => {
    fc.assert(
      fc.property(sourceArb, ({ source, lists, min }) => {
        const x = buildEntrySummaries(source, min);
        assert.equal(x.summaryMin[0], min);
        const want = lists.flatMap((l, e) => (l.length >= min ? [e] : []));
        assert.deepEqual([...x.summaryEntries], want);
        assert.equal(x.summaryValues.length, want.length * SUMMARY_WIDTH);
        lists.forEach((l, e) => {
          const at = summaryAt(x, e);
          if (l.length < min) {
            assert.equal(at, -1);
            return;
          }
          for (const mode of [INBOUND, OUTBOUND, BOTH]) {
            const of = l.filter(
              (o) => mode === BOTH || (source.msgCombo[o] < CHANNEL_COUNT ? INBOUND : OUTBOUND) === mode,
            );
            const got = [...x.summaryValues.subarray(at + mode * 3, at + mode * 3 + 3)];
            const conversations = new Set(of.map((o) => source.msgConversation[o])).size;
            assert.deepEqual(got, [of.length, conversations, of.length > 0 ? of[of.length - 1] : NONE], `mode ${mode}`);
          }
        });
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('refuses a minimum below 1', () => {
    const empty: SummarySource = {
      ...encodePostStarts(new Uint32Array(1), new Uint32Array(1), 0),
      messageCount: 0,
      entryCount: 0,
      entryFlags: new Uint16Array(0),
      entryNewestIn: new Uint32Array(1),
      storedPostings: new Uint32Array(0),
      msgCombo: new Uint8Array(0),
      msgConversation: new Uint32Array(0),
      conversationCount: 0,
    };
    assert.throws(() => buildEntrySummaries(empty, 0), /summary minimum must be >= 1, got 0/);
  });
});
