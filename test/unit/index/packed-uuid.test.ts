/**
 * Message ids in UUID form are kept packed, 17 bytes instead of 36 (src/index/packed-uuid.ts).
 * A search gives them back byte for byte as the reference does, in their own case; ids that only
 * look like UUIDs stay text; an export gives every id back as imported; and an index whose ids are
 * all text (a snapshot written before packing) answers the same bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import { contentStart, idStart, rowStart } from '../../../src/index/message-rows.js';
import {
  isPacked,
  PACKED_LENGTH,
  packUuid,
  UUID_TEXT_LENGTH,
  unpackUuid,
  uuidCase,
} from '../../../src/index/packed-uuid.js';
import type { MessageLine } from '../../../src/model/records.js';
import { bodyWriter, bytesOf } from '../../../src/query/body-writer.js';
import { searchBody } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { exportColumns, flattenIndex, orgDataOf } from '../../../src/store/flat-index.js';
import { bareContact, dataOfLines } from '../../helpers/one-contact.js';
import { referenceSearch } from '../../reference/brute-force.js';

const ORG = '0b0e0c0a-0000-4000-8000-000000000002';
const CONTACT = '0b0e0c0a-0000-4000-8000-0000000000c2';

const LOWER = '3f2a9c4e-0b1d-4e8f-a7c6-5d4e3f2a1b0c';
const ascii = (s: string) => new Uint8Array(Buffer.from(s, 'latin1'));

describe('uuidCase', () => {
  it('takes UUIDs of one case (or of digits alone) and nothing else', () => {
    const cases: [string, number][] = [
      [LOWER, 0],
      [LOWER.toUpperCase(), 1],
      ['01234567-8901-2345-6789-012345678901', 0],
      ['00000000-0000-0000-0000-000000000000', 0],
      ['ffffffff-ffff-ffff-ffff-ffffffffffff', 0],
      ['FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', 1],
      ['3F2a9c4e-0b1d-4e8f-a7c6-5d4e3f2a1b0c', -1], // mixed case: packed, it would come back in one
      [LOWER.slice(1), -1],
      [`${LOWER}0`, -1],
      [`{${LOWER.slice(1, -1)}}`, -1],
      [LOWER.replace(/-/g, ''), -1],
      [`${LOWER.slice(0, 8)}0${LOWER.slice(9)}`, -1], // a digit where a dash goes
      [`${LOWER.slice(0, 7)}-${LOWER[8]}${LOWER.slice(9)}`.slice(0, 36), -1], // a dash moved
      [`g${LOWER.slice(1)}`, -1],
      [`${LOWER.slice(0, 35)}G`, -1],
      ['', -1],
    ];
    for (const [text, want] of cases) {
      const bytes = ascii(text);
      assert.equal(uuidCase(bytes, 0, bytes.length), want, text);
    }
  });

  it('packs into 17 bytes that unpack, and are written by the body writer, as the text', () => {
    for (const text of [LOWER, LOWER.toUpperCase(), '01234567-89ab-cdef-0123-456789abcdef']) {
      const src = ascii(`xx${text}yy`);
      const letterCase = uuidCase(src, 2, 2 + UUID_TEXT_LENGTH);
      const out = new Uint8Array(3 + PACKED_LENGTH);
      assert.equal(packUuid(src, 2, letterCase, out, 3), 3 + PACKED_LENGTH);
      assert.ok(isPacked(out, 3, PACKED_LENGTH));
      assert.equal(unpackUuid(out, 3), text);
      const w = bodyWriter;
      w.reset();
      w.reserve(64);
      w.uuid(bytesOf(out), 3);
      assert.equal(w.buf.toString('latin1', 0, w.pos), text);
    }
  });

  it('is never true of text of 17 bytes: escaped JSON starts with no byte below 0x20', () => {
    assert.ok(!isPacked(ascii('abcdefghijklmnopq'), 0, 17));
    assert.ok(!isPacked(ascii(`\\u0001${'a'.repeat(11)}`), 0, 17));
  });
});

describe('message ids in UUID form', () => {
  // ties in sent_at everywhere, so the id order (JavaScript <, upper case before lower) decides
  const ids = [
    LOWER,
    LOWER.toUpperCase(),
    '3f2a9c4e-0b1d-4e8f-a7c6-5d4e3f2a1b0d',
    '3F2A9C4E-0B1D-4E8F-A7C6-5D4E3F2A1B0D',
    '3F2a9c4e-0b1d-4e8f-a7c6-5d4e3f2a1b0c',
    '01234567-8901-2345-6789-012345678901',
    LOWER.slice(1),
    `{${LOWER}}`,
    'abcdefghijklmnopq', // 17 bytes of text, as long as a packed id
    'm1',
  ];
  const messages: MessageLine[] = ids.map((id, i) => ({
    id,
    organization_id: ORG,
    contact_id: CONTACT,
    conversation_id: i % 2 === 0 ? LOWER : 'c1',
    channel: i % 2 === 0 ? 'whatsapp' : 'email',
    direction: i % 3 === 0 ? 'outbound' : 'inbound',
    content: `pedido número ${i}`,
    sent_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i % 3)).toISOString(),
  }));
  const contacts = [bareContact(ORG, CONTACT, 'Ana')];
  const data = dataOfLines(ORG, contacts, messages);
  let order: Uint32Array | undefined;
  const index = buildIndex(data, {
    onOrder: (o) => {
      order = o;
    },
  });
  const asText = buildIndex(data, { packIds: false });
  const queries = [
    'q=pedido&direction=all&messages_limit=20',
    'q=pedido&messages_limit=2',
    'q=numero&channel=email',
    'q=pedido&direction=outbound&messages_limit=1',
  ];

  it('are answered byte for byte as the reference answers, and as an index of text ids', () => {
    for (const q of queries) {
      const parsed = parseSearchParams(`organization_id=${ORG}&${q}`);
      assert.ok(parsed.ok);
      const want = JSON.stringify(referenceSearch(contacts, messages, parsed.request));
      assert.equal(Buffer.from(searchBody(index, parsed.request)).toString('utf8'), want, q);
      assert.equal(Buffer.from(searchBody(asText, parsed.request)).toString('utf8'), want, q);
    }
  });

  it('are packed when of one case, 19 bytes less a message; the rest stay text', () => {
    const packed = new Set(ids.slice(0, 4).concat(ids[5]));
    assert.equal(asText.msgRowBytes.length - index.msgRowBytes.length, 19 * packed.size);
    const rows = index.msgRowBytes;
    for (let o = 0; o < ids.length; o++) {
      const from = idStart(rows, rowStart(index, o));
      const length = contentStart(rows, rowStart(index, o)) - from;
      const id = isPacked(rows, from, length)
        ? unpackUuid(rows, from)
        : Buffer.from(rows.subarray(from, from + length)).toString('utf8');
      assert.equal(isPacked(rows, from, length), packed.has(id), id);
    }
  });

  it('are given back by an export as they were imported', () => {
    const back = orgDataOf(flattenIndex(index, exportColumns(data, order!)));
    assert.deepEqual([...back.messages.id].sort(), [...ids].sort());
    const byId = new Map(messages.map((m) => [m.id, m.conversation_id]));
    for (let i = 0; i < back.messages.count; i++)
      assert.equal(back.messages.conversationId[i], byId.get(back.messages.id[i]));
  });
});
