/**
 * entryFlags and entryNewestIn (src/index/layout.ts): an entry keeps the time rank of its newest
 * inbound message and, in its flags, where its newest outbound message is (exactly up to 30
 * postings in, "31 or later" beyond) and whether its sent_at ties the message before it. Runs of
 * up to 45 inbound messages put the outbound one on both sides of the limit. Checked two ways:
 * newestOf against a scan of every entry's postings, and whole answers (every direction, any/all,
 * short top lists) against the reference.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildIndex } from '../../../src/index/build.js';
import {
  BOTH,
  CHANNEL_COUNT,
  COMBO_VALUE,
  entryOrdinals,
  HEAD_INLINE,
  INBOUND,
  newestOf,
  noInbound,
  OUTBOUND,
  rankMask,
  timeRank,
} from '../../../src/index/layout.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import type { Contact, MessageLine } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import type { SearchRequest } from '../../../src/request/search-request.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { bareContact } from '../../helpers/one-contact.js';
import { referenceSearch } from '../../reference/brute-force.js';

const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : Date.now() % 2 ** 31;
const RUNS = process.env.PROPERTY_RUNS !== undefined ? Math.max(50, Number(process.env.PROPERTY_RUNS) >> 3) : 300;
console.log(
  `entry-flags seed ${SEED} (reproduce: PROPERTY_SEED=${SEED} node --import tsx --test test/unit/index/entry-flags.test.ts)`,
);

const ORG = '0b0b0b0b-0000-4000-8000-00000000000b';
const WORDS = ['pedido', 'entrega', 'nota'];
const CHANNEL_NAMES = ['whatsapp', 'email', 'telegram'] as const;
const T0 = Date.UTC(2025, 0, 1);

/** Per contact, runs of messages of one direction, newest run first; times fall with a few ties. */
const orgArb = fc.record({
  contacts: fc.array(
    fc.array(
      fc.record({
        inbound: fc.boolean(),
        length: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 28, max: 45 })),
        words: fc.subarray(WORDS, { minLength: 1 }),
        channel: fc.integer({ min: 0, max: 2 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    { minLength: 1, maxLength: 4 },
  ),
  tieEvery: fc.integer({ min: 1, max: 5 }),
  // per contact, minutes its newest message lies before T0: contacts' times interleave, so an
  // entry's newest read one posting off reorders the page
  shifts: fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 4, maxLength: 4 }),
});

type OrgCase = typeof orgArb extends fc.Arbitrary<infer T> ? T : never;

function org(k: OrgCase) {
  const contacts: Contact[] = k.contacts.map((_, i) =>
    bareContact(ORG, `c${(i * 5) % k.contacts.length}-${i}`, `n${i}`),
  );
  const messages: MessageLine[] = [];
  k.contacts.forEach((runs, c) => {
    let step = 0;
    for (const run of runs) {
      for (let i = 0; i < run.length; i++, step++) {
        messages.push({
          id: `m${c}-${step}`,
          organization_id: ORG,
          contact_id: contacts[c].id,
          conversation_id: `cv${step % 3}`,
          channel: CHANNEL_NAMES[run.channel],
          direction: run.inbound ? 'inbound' : 'outbound',
          content: run.words.join(' '),
          // newest first within the contact; every tieEvery-th step shares its instant with the next
          sent_at: new Date(T0 - (k.shifts[c] + Math.floor(step / k.tieEvery)) * 60_000).toISOString(),
        });
      }
    }
  });
  const b = new OrgDataBuilder(ORG);
  for (const c of contacts) b.addContact(c);
  for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return { contacts, messages, data: b.build() };
}

describe('entry flags', () => {
  it('newestOf equals a scan of the entry in every direction', () => {
    fc.assert(
      fc.property(orgArb, (k) => {
        const index = buildIndex(org(k).data);
        const entries = index.entryContact.length;
        for (let e = 0; e < entries; e++) {
          const best = [-1, -1];
          for (const o of entryOrdinals(index, e)) {
            const out = (index.msgCombo[o] & COMBO_VALUE) >= CHANNEL_COUNT ? 1 : 0;
            if (best[out] < 0) best[out] = timeRank(index, o);
          }
          assert.equal(newestOf(index, e, INBOUND), best[0], `entry ${e} inbound`);
          assert.equal(newestOf(index, e, OUTBOUND), best[1], `entry ${e} outbound`);
          const newest = best[0] < 0 ? best[1] : best[1] < 0 ? best[0] : Math.min(best[0], best[1]);
          assert.equal(newestOf(index, e, BOTH), newest, `entry ${e} newest`);
          // without inbound messages: noInbound and the first message's ordinal, always inline
          const first = entryOrdinals(index, e)[0];
          assert.equal(
            index.entryNewestIn[e] & rankMask(index.messageCount),
            best[0] < 0 ? noInbound(index.messageCount) | first : best[0],
            `entry ${e} entryNewestIn`,
          );
          if (best[0] < 0) assert.ok((index.entryFlags[e] & HEAD_INLINE) !== 0, `entry ${e} head inline`);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('answers byte for byte like the reference in every direction, with and without top lists', () => {
    const queryArb = fc.record({
      terms: fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }),
      match: fc.constantFrom('any' as const, 'all' as const),
      direction: fc.constantFrom('inbound' as const, 'outbound' as const, 'all' as const),
      limit: fc.integer({ min: 1, max: 5 }),
      offset: fc.integer({ min: 0, max: 3 }),
      messagesLimit: fc.integer({ min: 0, max: 3 }),
      topList: fc.option(fc.integer({ min: 1, max: 3 })),
    });
    fc.assert(
      fc.property(orgArb, queryArb, (k, q) => {
        const o = org(k);
        const index = buildIndex(o.data, q.topList === null ? {} : { topLists: { minEntries: 1, length: q.topList } });
        const req: SearchRequest = {
          organizationId: ORG,
          terms: q.terms,
          match: q.match,
          direction: q.direction,
          channel: null,
          from: null,
          to: null,
          limit: q.limit,
          offset: q.offset,
          messagesLimit: q.messagesLimit,
        };
        const body = Buffer.from(searchBody(index, req)).toString('utf8');
        assert.equal(body, JSON.stringify(referenceSearch(o.contacts, o.messages, req)));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

describe('contact column width', () => {
  it('is 16 bits up to 65,536 contacts and 32 beyond, and answers like the reference either way', () => {
    for (const contactCount of [300, 65_600]) {
      const contacts: Contact[] = Array.from({ length: contactCount }, (_, i) =>
        bareContact(ORG, `k${(i * 7919) % contactCount}`),
      );
      // messages on contacts spread over the whole ordinal range, the top ones past 16 bits
      const messages: MessageLine[] = Array.from({ length: 3000 }, (_, i) => ({
        id: `m${i}`,
        organization_id: ORG,
        contact_id: contacts[(i * 104_729) % contactCount].id,
        conversation_id: `cv${i % 4}`,
        channel: CHANNEL_NAMES[i % 3],
        direction: i % 3 === 0 ? 'outbound' : 'inbound',
        content: WORDS.slice(0, 1 + (i % 3)).join(' '),
        sent_at: new Date(T0 - (i >> 1) * 1000).toISOString(),
      }));
      const b = new OrgDataBuilder(ORG);
      for (const c of contacts) b.addContact(c);
      for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
      const index = buildIndex(b.build(), { topLists: { minEntries: 1, length: 40 } });
      assert.equal(index.entryContact.constructor.name, contactCount <= 65_536 ? 'Uint16Array' : 'Uint32Array');
      for (const [terms, match, direction, offset] of [
        [['pedido'], 'any', 'all', 0],
        [['nota'], 'any', 'inbound', 30],
        [['pedido', 'entrega'], 'all', 'outbound', 0],
        [['entrega', 'nota'], 'any', 'all', 60],
        [['pedido entrega'], 'any', 'all', 0],
      ] as const) {
        const req: SearchRequest = {
          organizationId: ORG,
          terms: [...terms],
          match,
          direction,
          channel: null,
          from: null,
          to: null,
          limit: 25,
          offset,
          messagesLimit: 2,
        };
        const body = Buffer.from(searchBody(index, req)).toString('utf8');
        assert.equal(body, JSON.stringify(referenceSearch(contacts, messages, req)), `${contactCount}: ${terms}`);
      }
    }
  });
});
