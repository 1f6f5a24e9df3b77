/**
 * Message rows (src/index/message-rows.ts): a message's id and content side by side, the id after
 * a length prefix of 1 byte, or of 5 from 255 bytes on. Ids of every length around the switch,
 * with characters JSON escapes, must come out of a search byte for byte as the reference gives
 * them, and out of an export as they went in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import {
  contentBytesOf,
  contentStart,
  idStart,
  LONG_ID,
  prefixLength,
  rowsOf,
  writePrefix,
} from '../../../src/index/message-rows.js';
import type { MessageLine } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { exportColumns, flattenIndex, orgDataOf } from '../../../src/store/flat-index.js';
import { bareContact, dataOfLines } from '../../helpers/one-contact.js';
import { referenceSearch } from '../../reference/brute-force.js';

const ORG = '0b0e0c0a-0000-4000-8000-000000000001';
const CONTACT = '0b0e0c0a-0000-4000-8000-0000000000c1';

describe('the length prefix', () => {
  it('is 1 byte below LONG_ID bytes and 5 from there, and gives back where id and content start', () => {
    for (const length of [0, 1, 200, LONG_ID - 1, LONG_ID, LONG_ID + 1, 65_536, 1_000_000]) {
      const rows = new Uint8Array(3 + prefixLength(length) + length + 2);
      const at = writePrefix(rows, 3, length);
      assert.equal(at, 3 + (length < LONG_ID ? 1 : 5), `prefix of ${length}`);
      assert.equal(idStart(rows, 3), at);
      assert.equal(contentStart(rows, 3), at + length);
    }
  });

  it('rowsOf puts each message id and content in its row, and contentBytesOf counts only the contents', () => {
    const ids = ['', 'a', 'x'.repeat(LONG_ID), 'é'.repeat(300)];
    const contents = ['hello', '', 'z', 'ção'];
    const column = (values: string[]) => {
      const parts = values.map((s) => Buffer.from(s, 'utf8'));
      const offsets = new Uint32Array(values.length + 1);
      for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i] + parts[i].length;
      return { bytes: new Uint8Array(Buffer.concat(parts)), offsets };
    };
    const id = column(ids),
      content = column(contents);
    const rows = rowsOf(id.bytes, id.offsets, content.bytes, content.offsets, (length) => ({
      bytes: new Uint8Array(length),
      offsets: new Uint32Array(ids.length + 1),
    }));
    const text = Buffer.from(rows.bytes);
    for (let o = 0; o < ids.length; o++) {
      const row = rows.offsets[o];
      assert.equal(text.toString('utf8', idStart(rows.bytes, row), contentStart(rows.bytes, row)), ids[o]);
      assert.equal(text.toString('utf8', contentStart(rows.bytes, row), rows.offsets[o + 1]), contents[o]);
    }
    assert.equal(rows.offsets[ids.length], rows.bytes.length);
    assert.equal(contentBytesOf(rows.bytes, rows.offsets), content.bytes.length);
  });
});

describe('message ids of every length', () => {
  // around the 1-byte prefix's end, escaped characters counted in bytes (a quote is 2, é is 2)
  const ids = [
    '',
    'm',
    'q'.repeat(LONG_ID - 1),
    'q'.repeat(LONG_ID),
    'q'.repeat(LONG_ID + 1),
    '"'.repeat(128), // 256 escaped bytes from 128 characters
    `${'é'.repeat(127)}x`, // 255 bytes of UTF-8
    '\u0001'.repeat(50), // \u0001: 6 bytes each
    'm'.repeat(70_000),
  ];
  const messages: MessageLine[] = ids.map((id, i) => ({
    id,
    organization_id: ORG,
    contact_id: CONTACT,
    conversation_id: `c${i % 2}`,
    channel: i % 2 === 0 ? 'whatsapp' : 'email',
    direction: i % 3 === 0 ? 'outbound' : 'inbound',
    content: `pedido ${'"\\'.repeat(i)} número ${i}`,
    sent_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
  }));
  const contacts = [bareContact(ORG, CONTACT, 'Ana')];
  const data = dataOfLines(ORG, contacts, messages);
  let order: Uint32Array | undefined;
  const index = buildIndex(data, {
    onOrder: (o) => {
      order = o;
    },
  });

  it('are answered byte for byte as the reference answers', () => {
    for (const q of [
      'q=pedido&direction=all&messages_limit=20',
      'q=pedido&messages_limit=2',
      'q=numero&channel=email',
    ]) {
      const parsed = parseSearchParams(`organization_id=${ORG}&${q}`);
      assert.ok(parsed.ok);
      const want = JSON.stringify(referenceSearch(contacts, messages, parsed.request));
      assert.equal(Buffer.from(searchBody(index, parsed.request)).toString('utf8'), want, q);
    }
  });

  it('are given back by an export as they were imported', () => {
    const back = orgDataOf(flattenIndex(index, exportColumns(data, order!)));
    assert.deepEqual([...back.messages.id].sort(), [...ids].sort());
    const byId = new Map(messages.map((m) => [m.id, m.content]));
    for (let i = 0; i < back.messages.count; i++) assert.equal(back.messages.content[i], byId.get(back.messages.id[i]));
  });
});
