/**
 * A serving thread answers every organization with one scratch (scratch.ts), fitted to each index
 * in turn: queries interleaved over organizations of 40, 300 and 66,000 contacts (the last past a
 * Uint16 contact column, so a phrase view's slots change type) equal the brute-force reference,
 * whatever organization the thread answered before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { generateDataset } from '../../../scripts/gen-lib.js';
import { buildIndex } from '../../../src/index/build.js';
import type { OrgIndex } from '../../../src/index/org-index.js';
import type { Contact, MessageLine } from '../../../src/model/records.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { executeSearch } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';
import { referenceSearch, referenceTokens } from '../../reference/brute-force.js';

interface Org {
  id: string;
  contacts: Contact[];
  messages: MessageLine[];
  index: OrgIndex;
  queries: string[];
}

function org(messages: number, contacts: number, seed: number): Org {
  const d = generateDataset({ messages, contacts, organizations: 1, seed });
  const id = d.contacts[0].organization_id;
  const b = new OrgDataBuilder(id);
  for (const c of d.contacts) b.addContact(c);
  for (const m of d.messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  // the data's most frequent three-word phrase (a view of its own, in a scratch slot: in the
  // large organization it matches contacts past any smaller organization's slot, and past 65,535)
  const counts = new Map<string, number>();
  for (const m of d.messages) {
    const t = referenceTokens(m.content);
    for (let i = 0; i + 2 < t.length; i++) {
      const k = `${t[i]} ${t[i + 1]} ${t[i + 2]}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
  }
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0].split(' ');
  const phrase3 = encodeURIComponent(top.join(' '));
  const phrase2 = encodeURIComponent(top.slice(1).join(' '));
  return {
    id,
    contacts: d.contacts,
    messages: d.messages,
    index: buildIndex(b.build(), { pairMinFrequency: 20 }),
    queries: [
      'q=que',
      `q=${phrase3}&limit=100&messages_limit=20`,
      `keywords=${phrase3},${phrase2}&match=all`,
      'keywords=que,de&match=all&direction=all',
      'keywords=que,foi,pedido,the,com,para&limit=100',
      'q=de&channel=whatsapp&from=2024-03-01&to=2024-12-31',
      'q=que&offset=7&limit=9&direction=outbound',
    ],
  };
}

test('one scratch a thread: queries interleaved over organizations of 40, 300 and 66,000 contacts equal the reference', () => {
  const orgs = [org(600, 40, 3), org(70_000, 66_000, 5), org(5_000, 300, 7)];
  assert.ok(orgs[1].index.contactCount > 0x10000, 'the large organization needs a Uint32 contact column');
  // every query of every organization, round robin over the organizations, twice
  let answers = 0;
  for (let round = 0; round < 2; round++) {
    for (let q = 0; q < orgs[0].queries.length; q++) {
      for (const o of round === 0 ? orgs : [...orgs].reverse()) {
        const query = o.queries[q];
        const parsed = parseSearchParams(`organization_id=${o.id}&${query}`);
        assert.ok(parsed.ok, query);
        const expected = referenceSearch(o.contacts, o.messages, parsed.request);
        assert.deepStrictEqual(executeSearch(o.index, parsed.request), expected, `${o.contacts.length}: ${query}`);
        if (expected.data.length > 0) answers++;
      }
    }
  }
  assert.ok(answers > 30, `${answers} non-empty answers`);
});

test("the scratch keeps no view of the last queried index once its query is done (a replaced version's sections stayed alive)", async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  let o: Org | null = org(600, 40, 11);
  const parsed = parseSearchParams(`organization_id=${o.id}&q=que&messages_limit=20`);
  assert.ok(parsed.ok);
  assert.ok(executeSearch(o.index, parsed.request).data.length > 0);
  // the message rows' bytes: what a page copies from, through the scratch's text views
  const rows = new WeakRef(o.index.msgRowBytes.buffer);
  o = null;
  for (let i = 0; i < 5 && rows.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  assert.equal(rows.deref(), undefined, 'the index is gone once nothing but the scratch could hold it');
});
