/**
 * Top lists (precomputed first pages of frequent tokens, src/index/top-lists.ts) against the
 * brute-force reference: few words spread over many contacts, lists cut short (1-3 entries) so
 * pages run past them, several terms merged under `any` and `all`, every direction, ties in
 * sent_at. The whole body's bytes are compared.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildIndex } from '../../../src/index/build.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import type { Contact, MessageLine } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import type { SearchRequest } from '../../../src/request/search-request.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { referenceSearch } from '../../reference/brute-force.js';
import { bareContact } from '../../helpers/one-contact.js';

const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : Date.now() % 2 ** 31;
const RUNS = process.env.PROPERTY_RUNS !== undefined ? Number(process.env.PROPERTY_RUNS) : 1500;
console.log(
  `top-page seed ${SEED} (reproduce: PROPERTY_SEED=${SEED} node --import tsx --test test/unit/query/top-page.test.ts)`,
);

const ORG = '0a0a0a0a-0000-4000-8000-00000000000a';
const WORDS = ['pedido', 'entrega', 'nota', 'fiscal'];
const T0 = Date.UTC(2025, 0, 1);

const caseArb = fc.record({
  contacts: fc.integer({ min: 1, max: 24 }),
  messages: fc.array(
    fc.record({
      contact: fc.nat(),
      words: fc.subarray(WORDS, { minLength: 1 }),
      inbound: fc.boolean(),
      // few distinct instants: ties in sent_at go to the contact id
      slot: fc.integer({ min: 0, max: 6 }),
    }),
    { minLength: 1, maxLength: 80 },
  ),
  length: fc.integer({ min: 1, max: 4 }),
  terms: fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }),
  match: fc.constantFrom('any' as const, 'all' as const),
  direction: fc.constantFrom('inbound' as const, 'outbound' as const, 'all' as const),
  limit: fc.integer({ min: 1, max: 6 }),
  offset: fc.integer({ min: 0, max: 5 }),
  messagesLimit: fc.integer({ min: 0, max: 2 }),
});

describe('top lists', () => {
  it('answer byte for byte like the reference, lists short or whole', () => {
    fc.assert(
      fc.property(caseArb, (k) => {
        const contacts: Contact[] = Array.from({ length: k.contacts }, (_, i) =>
          bareContact(ORG, `c${(i * 7) % k.contacts}-${i}`, `n${i}`),
        );
        const messages: MessageLine[] = k.messages.map((m, i) => ({
          id: `m${i}`,
          organization_id: ORG,
          contact_id: contacts[m.contact % k.contacts].id,
          conversation_id: `cv${m.contact % 3}`,
          channel: 'whatsapp',
          direction: m.inbound ? 'inbound' : 'outbound',
          content: m.words.join(' '),
          sent_at: new Date(T0 + m.slot * 60_000).toISOString(),
        }));
        const b = new OrgDataBuilder(ORG);
        for (const c of contacts) b.addContact(c);
        for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
        const index = buildIndex(b.build(), { topLists: { minEntries: 1, length: k.length } });
        const req: SearchRequest = {
          organizationId: ORG,
          terms: k.terms,
          match: k.match,
          direction: k.direction,
          channel: null,
          from: null,
          to: null,
          limit: k.limit,
          offset: k.offset,
          messagesLimit: k.messagesLimit,
        };
        const body = Buffer.from(searchBody(index, req)).toString('utf8');
        assert.equal(body, JSON.stringify(referenceSearch(contacts, messages, req)));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
