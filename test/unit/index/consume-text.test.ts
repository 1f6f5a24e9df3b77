/** consumeText (the import's build): the same index, with the input's strings given up. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
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
