/** Reading an import's prepared text (OrgData.prepared) back, for tests that compare plain columns. */
import assert from 'node:assert/strict';
import type { OrgData } from '../../src/model/records.js';
import { tokensOf } from '../../src/text/analyze.js';

/**
 * `data` without `prepared`, each message's content decoded from the prepared bytes; asserts that
 * the prepared tokens of every message spell tokensOf(its content).
 */
export function unprepared(data: OrgData): OrgData {
  const { prepared, ...plain } = data;
  assert.ok(prepared !== undefined, 'the data has prepared text');
  const m = plain.messages;
  const { bytes, offsets } = prepared.content;
  assert.equal(offsets.length, m.count + 1);
  assert.equal(prepared.seqStart.length, m.count + 1);
  const words = prepared.interner.tokens();
  const content = m.content.map((kept, i) => {
    assert.equal(kept, '', `message ${i}: no content string kept`);
    const text = JSON.parse(`"${bytes.toString('utf8', offsets[i], offsets[i + 1])}"`) as string;
    const ids = [...prepared.seq.subarray(prepared.seqStart[i], prepared.seqStart[i + 1])];
    assert.deepEqual(
      ids.map((id) => words[id]),
      tokensOf(text),
      `message ${i}: tokens`,
    );
    return text;
  });
  return { ...plain, messages: { ...m, content } };
}
