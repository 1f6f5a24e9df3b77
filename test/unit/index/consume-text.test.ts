/** consumeText (the import's build): the same index, with the input's strings given up. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { flattenIndex } from '../../../src/store/flat-index.js';
import { prepareSnapshot } from '../../../src/store/snapshot-format.js';
import { generate, orgData } from '../../fixtures/gen-data.js';

test('consumeText: every section equals the plain build, and the string arrays of the messages are emptied', () => {
  const data = orgData(generate(7, 40, 3000, 1));
  const copy = structuredClone(data);
  const plain = flattenIndex(buildIndex(data)).sections;
  const consumed = flattenIndex(buildIndex(copy, { consumeText: true })).sections;
  assert.deepEqual(Object.keys(consumed).sort(), Object.keys(plain).sort());
  for (const [name, section] of Object.entries(plain)) assert.deepEqual(consumed[name], section, name);
  const m = copy.messages;
  assert.equal(m.count, data.messages.count);
  for (const column of [m.id, m.conversationId, m.content]) assert.equal(column.length, 0);
  // the input of the plain build is untouched
  assert.ok(data.messages.content.some((s) => s.length > 0));
});

test('text prepared while read (OrgData.prepared, the import): every section equals the build that prepares it', () => {
  const data = orgData(generate(8, 40, 3000, 1));
  const m = data.messages;
  // a third of the messages take conversation ids that recur under other contacts (a pair each)
  for (let i = 0; i < m.count; i += 3) m.conversationId[i] = `shared-${i % 11}`;
  const b = new OrgDataBuilder(data.organizationId, { prepareText: true });
  for (const c of data.contacts) b.addContact(c);
  for (let i = 0; i < m.count; i++)
    b.addResolved(m.contact[i], m.channel[i], m.direction[i], m.id[i], m.conversationId[i], m.content[i], m.sentAt[i]);
  const read = b.build();
  const prepared = read.prepared;
  assert.ok(prepared !== undefined);
  const plain = flattenIndex(buildIndex(data)).sections;
  const pre = flattenIndex(buildIndex(read, { consumeText: true })).sections;
  assert.deepEqual(Object.keys(pre).sort(), Object.keys(plain).sort());
  for (const [name, section] of Object.entries(plain)) assert.deepEqual(pre[name], section, name);
  // prepared text for another message count is refused, not read past
  assert.throws(
    () => buildIndex({ ...data, prepared: { ...prepared, seqStart: prepared.seqStart.subarray(1) } }),
    /prepared text for 2999 \/ 3000 \/ 3000 messages, not 3000/,
  );
  // format 1 stores content strings, which prepared data does not hold: refused, not written empty
  assert.throws(() => prepareSnapshot({ ...read, prepared }, 1), /format 1 cannot store an import's prepared text/);
  // consumeText let go of the prepared text once copied
  assert.equal(read.prepared, undefined);
});
