/**
 * conversations_count for contacts of 1 to 80 distinct conversations (the property test's have at
 * most 4): whole answers against the brute-force reference, on the built index and on one loaded
 * from its snapshot, for every walk (one term, two or three, ten, a phrase, filters, offsets).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateDataset } from '../../../scripts/gen-lib.js';
import { buildIndex } from '../../../src/index/build.js';
import type { MessageLine } from '../../../src/model/records.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { executeSearch } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { flattenIndex, wrapIndex } from '../../../src/store/flat-index.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { throughSnapshot } from '../../helpers/snapshot-copy.js';
import { referenceSearch } from '../../reference/brute-force.js';

// distinct conversations of contact c: cycling through these counts
const PER_CONTACT = [1, 15, 16, 17, 35, 80];

const QUERIES = [
  'q=que',
  'q=que&direction=all&limit=100&messages_limit=20',
  'q=que&direction=outbound&offset=3&limit=9',
  'keywords=que,de&match=all',
  'keywords=que,foi,pedido',
  'keywords=que,pedido,the,com,para,tem,pix,chegou,boleto,entrega&limit=100&messages_limit=20&direction=all',
  'q=o%20de',
  'q=que&channel=whatsapp',
  'q=de&from=2024-03-01&to=2024-12-31',
];

test('conversations_count of contacts with up to 80 conversations equals the reference', () => {
  const d = generateDataset({ messages: 12_000, contacts: 60, organizations: 1, seed: 11 });
  const seen = new Map<string, number>();
  const messages: MessageLine[] = d.messages.map((m) => {
    const k = seen.get(m.contact_id) ?? 0;
    seen.set(m.contact_id, k + 1);
    const c = d.contacts.findIndex((x) => x.id === m.contact_id);
    return { ...m, conversation_id: `cv${k % PER_CONTACT[c % PER_CONTACT.length]}` };
  });
  const orgId = d.contacts[0].organization_id;
  const b = new OrgDataBuilder(orgId);
  for (const c of d.contacts) b.addContact(c);
  for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  const index = buildIndex(b.build(), { pairMinFrequency: 50 });
  const loaded = wrapIndex(throughSnapshot(flattenIndex(index), orgId));
  let many = 0;
  for (const q of QUERIES) {
    const parsed = parseSearchParams(`organization_id=${orgId}&${q}`);
    assert.ok(parsed.ok, q);
    const expected = referenceSearch(d.contacts, messages, parsed.request);
    for (const item of expected.data) if (item.conversations_count > 16) many++;
    assert.deepStrictEqual(executeSearch(index, parsed.request), expected, q);
    assert.deepStrictEqual(executeSearch(loaded, parsed.request), expected, `${q} (loaded)`);
  }
  // the pages did hold such contacts
  assert.ok(many > 10, `${many} page contacts with more than 16 conversations`);
});

test('a contact of more than 65,536 conversations: 32-bit numbers, answers equal to the reference', () => {
  const d = generateDataset({ messages: 10, contacts: 2, organizations: 1, seed: 12 });
  const [a, b] = d.contacts;
  const base = Date.parse('2024-01-01T00:00:00Z');
  const messages: MessageLine[] = [];
  for (let i = 0; i < 70_000; i++) {
    messages.push({
      id: `m${i}`,
      organization_id: a.organization_id,
      contact_id: i % 50 === 0 ? b.id : a.id,
      // contact a: one conversation a message; contact b: three
      conversation_id: i % 50 === 0 ? `b${i % 3}` : `a${i}`,
      channel: i % 7 === 0 ? 'email' : 'whatsapp',
      direction: i % 3 === 0 ? 'outbound' : 'inbound',
      content: i % 2 === 0 ? `que ${i}` : `pedido de ${i % 11}`,
      sent_at: new Date(base + i * 60_000).toISOString(),
    });
  }
  const orgId = a.organization_id;
  const builder = new OrgDataBuilder(orgId);
  for (const c of d.contacts) builder.addContact(c);
  for (const m of messages) builder.addMessage(m, parseRfc3339(m.sent_at)!);
  const index = buildIndex(builder.build());
  assert.ok(index.msgConversation instanceof Uint32Array, 'numbers past 65,535 take 32 bits');
  const loaded = wrapIndex(throughSnapshot(flattenIndex(index), orgId));
  assert.ok(loaded.msgConversation instanceof Uint32Array);
  for (const q of [
    'q=que&direction=all&messages_limit=20',
    'keywords=que,pedido&direction=all&messages_limit=20',
    'q=pedido&channel=whatsapp',
  ]) {
    const parsed = parseSearchParams(`organization_id=${orgId}&${q}`);
    assert.ok(parsed.ok, q);
    const expected = referenceSearch(d.contacts, messages, parsed.request);
    assert.ok(
      expected.data.some((item) => item.conversations_count > 10_000),
      q,
    );
    assert.deepStrictEqual(executeSearch(index, parsed.request), expected, q);
    assert.deepStrictEqual(executeSearch(loaded, parsed.request), expected, `${q} (loaded)`);
  }
});
