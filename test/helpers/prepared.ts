/** Reading an import's prepared text (OrgData.prepared) back, for tests that compare plain columns. */
import assert from 'node:assert/strict';
import type { OrgData } from '../../src/model/records.js';
import { tokensOf } from '../../src/text/analyze.js';

/**
 * `data` without `prepared`, each message's id, content and conversation id decoded from the
 * prepared columns; asserts that no string a message was kept, that the prepared tokens of every
 * message spell tokensOf(its content) and that its conversations are exactly its (contact,
 * conversation id) pairs.
 */
export function unprepared(data: OrgData): OrgData {
  const { prepared, ...plain } = data;
  assert.ok(prepared !== undefined, 'the data has prepared text');
  const m = plain.messages;
  const { bytes, offsets } = prepared.content;
  assert.equal(offsets.length, m.count + 1);
  assert.equal(prepared.seqStart.length, m.count + 1);
  const words = prepared.interner.tokens();
  assert.equal(m.id.length + m.content.length + m.conversationId.length, 0, 'no string a message kept');
  assert.equal(prepared.ids.count, m.count);
  const id = Array.from({ length: m.count }, (_, i) => prepared.ids.at(i));
  const content = Array.from({ length: m.count }, (_, i) => {
    const text = JSON.parse(`"${bytes.toString('utf8', offsets[i], offsets[i + 1])}"`) as string;
    const ids = [...prepared.seq.subarray(prepared.seqStart[i], prepared.seqStart[i + 1])];
    assert.deepEqual(
      ids.map((id) => words[id]),
      tokensOf(text),
      `message ${i}: tokens`,
    );
    return text;
  });
  // conversations: each message's id read back, its conversation's contact the message's own
  const ids = prepared.conversations.ids.view();
  assert.equal(prepared.conversation.length, m.count);
  const conversationId = Array.from({ length: m.count }, (_, i) => {
    const conv = prepared.conversation[i];
    assert.ok(conv < prepared.conversations.size, `message ${i}: conversation ${conv} exists`);
    assert.equal(prepared.conversations.contact.buf[conv], m.contact[i], `message ${i}: conversation's contact`);
    return JSON.parse(`"${ids.bytes.toString('utf8', ids.offsets[conv], ids.offsets[conv + 1])}"`) as string;
  });
  // one conversation a (contact, id) pair, and one pair a conversation
  const pairOf = new Map<number, string>();
  const convOf = new Map<string, number>();
  conversationId.forEach((id, i) => {
    const pair = `${m.contact[i]}:${id}`;
    const conv = prepared.conversation[i];
    assert.equal(pairOf.get(conv) ?? pair, pair, `conversation ${conv} holds one pair`);
    assert.equal(convOf.get(pair) ?? conv, conv, `pair ${pair} is one conversation`);
    pairOf.set(conv, pair);
    convOf.set(pair, conv);
  });
  return { ...plain, messages: { ...m, id, content, conversationId } };
}
