/**
 * Long messages (emails of a few KB) put the row and token-sequence starts in far blocks
 * (src/index/block-starts.ts: 64 messages spanning 64 KiB or more keep their starts whole) next
 * to near ones: every answer, phrases included, is byte for byte the reference's, and an export
 * gives every message back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAR } from '../../../src/index/block-starts.js';
import { buildIndex } from '../../../src/index/build.js';
import type { MessageLine } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { exportColumns, flattenIndex, orgDataOf } from '../../../src/store/flat-index.js';
import { bareContact, dataOfLines } from '../../helpers/one-contact.js';
import { referenceSearch } from '../../reference/brute-force.js';

const ORG = '0b0e0c0a-0000-4000-8000-000000000003';
/** 110 contacts of 3 messages each: two pages of 100 render every message */
const CONTACTS = Array.from({ length: 110 }, (_, i) => `0b0e0c0a-0000-4000-8000-${String(i).padStart(12, '0')}`);
const WORDS = ['pedido', 'entrega', 'boleto', 'segunda', 'via', 'prazo', 'nota', 'fiscal', 'cliente', 'ação'];

/** A text of `n` words drawn from WORDS by i (deterministic), with "segunda via" now and then. */
function text(i: number, n: number): string {
  const out: string[] = [];
  for (let k = 0; k < n; k++) out.push(k % 97 === 13 ? 'segunda via' : WORDS[(i * 7 + k * k) % WORDS.length]);
  return out.join(k(i));
}
function k(i: number): string {
  return i % 3 === 0 ? ' ' : i % 3 === 1 ? ', ' : '\n';
}

describe('an organization of long and short messages', () => {
  // 130 long ones (1,200 words, ~8 KB) among 200 short ones, in runs, so that blocks of 64 go
  // far and near; times one second apart, newest first
  const messages: MessageLine[] = [];
  for (let i = 0; i < 330; i++) {
    const long = (i >= 40 && i < 170) || i === 300;
    messages.push({
      id: `m${i}`,
      organization_id: ORG,
      contact_id: CONTACTS[i % 110],
      conversation_id: `c${i % 11}`,
      channel: i % 2 === 0 ? 'email' : 'whatsapp',
      direction: i % 5 === 0 ? 'outbound' : 'inbound',
      content: `pedido ${long ? text(i, 1200) : text(i, 5 + (i % 9))}`,
      sent_at: new Date(Date.UTC(2025, 0, 1) - i * 1000).toISOString(),
    });
  }
  const contacts = CONTACTS.map((c, i) => bareContact(ORG, c, `Contact ${i}`));
  const data = dataOfLines(ORG, contacts, messages);
  let order: Uint32Array | undefined;
  const index = buildIndex(data, {
    onOrder: (o) => {
      order = o;
    },
  });

  it('has far and near blocks of both starts', () => {
    for (const delta of [index.msgRowStartDelta, index.seqStartDelta]) {
      assert.ok(
        delta.some((d) => d === FAR),
        'a far block',
      );
      assert.ok(
        delta.some((d) => d !== FAR),
        'a near block',
      );
    }
  });

  it('answers byte for byte as the reference, phrases included', () => {
    for (const q of [
      // every message, on two pages: each row's bounds, at every place in its block
      'q=pedido&direction=all&messages_limit=20&limit=100',
      'q=pedido&direction=all&messages_limit=20&limit=100&offset=100',
      'q=segunda%20via&direction=all&messages_limit=20',
      'q=nota%20fiscal&direction=all&messages_limit=20',
      'q=fiscal%20cliente%20acao&direction=all&messages_limit=20',
      'keywords=prazo,%22via%20prazo%22&channel=email&messages_limit=20',
      'q=boleto&direction=outbound&limit=2&offset=1',
      'q=entrega&from=2024-12-31T23:57:00Z&to=2024-12-31T23:59:00Z&direction=all&messages_limit=20',
    ]) {
      const parsed = parseSearchParams(`organization_id=${ORG}&${q}`);
      assert.ok(parsed.ok, q);
      const want = JSON.stringify(referenceSearch(contacts, messages, parsed.request));
      assert.equal(Buffer.from(searchBody(index, parsed.request)).toString('utf8'), want, q);
    }
  });

  it('gives every message back in an export', () => {
    const back = orgDataOf(flattenIndex(index, exportColumns(data, order!)));
    assert.deepEqual(back.messages.content, data.messages.content);
    assert.deepEqual(back.messages.id, data.messages.id);
  });
});
