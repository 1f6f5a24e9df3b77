/** consumeText (the import's build): the same index, with the input's strings given up. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { flattenIndex } from '../../../src/store/flat-index.js';
import { generate, orgData } from '../../fixtures/gen-data.js';

test('consumeText: every section equals the plain build, and the messages strings are emptied', () => {
  const data = orgData(generate(7, 40, 3000, 1));
  const copy = structuredClone(data);
  const plain = flattenIndex(buildIndex(data)).sections;
  const consumed = flattenIndex(buildIndex(copy, { consumeText: true })).sections;
  assert.deepEqual(Object.keys(consumed).sort(), Object.keys(plain).sort());
  for (const [name, section] of Object.entries(plain)) assert.deepEqual(consumed[name], section, name);
  const m = copy.messages;
  assert.equal(m.count, data.messages.count);
  for (const column of [m.id, m.conversationId, m.content]) assert.ok(column.every((s) => s === ''));
  // the input of the plain build is untouched
  assert.ok(data.messages.content.some((s) => s.length > 0));
});

test('tokens interned while read (OrgData.tokens, the import): every section equals the build that interns them', () => {
  const data = orgData(generate(8, 40, 3000, 1));
  const b = new OrgDataBuilder(data.organizationId, { tokenize: true });
  for (const c of data.contacts) b.addContact(c);
  const m = data.messages;
  for (let i = 0; i < m.count; i++)
    b.addResolved(m.contact[i], m.channel[i], m.direction[i], m.id[i], m.conversationId[i], m.content[i], m.sentAt[i]);
  const read = b.build();
  const tokens = read.tokens;
  assert.ok(tokens !== undefined);
  const plain = flattenIndex(buildIndex(data)).sections;
  const pre = flattenIndex(buildIndex(read, { consumeText: true })).sections;
  assert.deepEqual(Object.keys(pre).sort(), Object.keys(plain).sort());
  for (const [name, section] of Object.entries(plain)) assert.deepEqual(pre[name], section, name);
  // token starts for another message count are refused, not read past
  assert.throws(
    () => buildIndex({ ...data, tokens: { ...tokens, seqStart: tokens.seqStart.subarray(1) } }),
    /token starts for 2999 messages, not 3000/,
  );
});
