/**
 * OrgDataBuilder with `prepareText` (the import): the text it prepares, its own and a reader
 * thread's (addPrepared, token ids remapped), reads back as the contents and their tokensOf.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jsonEscaped, StringColumnBuilder } from '../../../src/index/string-column.js';
import { ConversationTable } from '../../../src/model/conversation-table.js';
import { Growable } from '../../../src/model/growable.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { internTokens } from '../../../src/text/analyze.js';
import { TokenInterner } from '../../../src/text/token-interner.js';
import { unprepared } from '../../helpers/prepared.js';

const ORG = '00000001-0000-4000-8000-000000000000';
const WORDS = [
  'pedido',
  'Pedido',
  'PEDÍDO',
  'são',
  'Σίσυφος',
  'x',
  '😀',
  'naïve',
  'o',
  'ção',
  '12',
  'a-b',
  '"q"',
  '\\',
  '\n',
];
const text = fc
  .array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 6 })), { maxLength: 12 })
  .map((ws) => ws.join(' '));

function builder(): OrgDataBuilder {
  const b = new OrgDataBuilder(ORG, { prepareText: true });
  for (const id of ['c0', 'c1'])
    b.addContact({ id, organization_id: ORG, name: null, phone: null, email: null, avatar_url: null, source: null });
  return b;
}

/** A message: its content, contact ordinal and conversation id (few, so ids recur under both contacts). */
type Message = [string, number, string];
const message = fc.tuple(text, fc.integer({ min: 0, max: 1 }), fc.constantFrom('a', 'b', '"q"', 'ç'));

/** The reader thread's side (read-worker.ts): its own numbering, new tokens and conversations interned into `b` in order. */
class Reader {
  private readonly interner = new TokenInterner();
  private readonly table = new ConversationTable();
  readonly tokenRemap = new Growable(16);
  readonly conversationRemap = new Growable(16);

  batch(b: OrgDataBuilder, messages: Message[]) {
    const tokens = new Growable(16);
    const tokenEnds: number[] = [];
    const conversation: number[] = [];
    const column = new StringColumnBuilder();
    for (const [content, contact, conv] of messages) {
      internTokens(content, this.interner, tokens);
      tokenEnds.push(tokens.length);
      column.push(jsonEscaped(content));
      const known = this.table.size;
      const local = this.table.idOf(contact, conv);
      if (local === known) this.conversationRemap.push(b.internConversation(contact, conv));
      conversation.push(local);
    }
    for (let id = this.tokenRemap.length; id < this.interner.size; id++)
      this.tokenRemap.push(b.internToken(this.interner.token(id)));
    const { bytes, offsets } = column.build();
    return {
      tokens: tokens.toArray(),
      tokenEnds: Uint32Array.from(tokenEnds),
      content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      contentOffsets: offsets,
      conversation: Uint32Array.from(conversation),
    };
  }
}

describe('OrgDataBuilder prepareText', () => {
  test("its own messages and a reader thread's read back as their contents, tokens and conversations", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(message, { minLength: 1, maxLength: 4 }), fc.boolean()), { maxLength: 15 }),
        (groups) => {
          const b = builder();
          const reader = new Reader();
          const all: Message[] = [];
          for (const [messages, fromReader] of groups) {
            if (!fromReader) {
              for (const m of messages) b.addResolved(m[1], 0, 0, `m${all.push(m)}`, m[2], m[0], 1000);
              continue;
            }
            const batch = reader.batch(b, messages);
            const { tokenRemap, conversationRemap } = reader;
            // the contents of a batch go in runs, as the import's merge adds them (two here)
            const half = messages.length >> 1;
            b.addPreparedContents(batch, 0, half);
            b.addPreparedContents(batch, half, messages.length);
            messages.forEach((m, k) => {
              const id = `m${all.push(m)}`;
              b.addPrepared(
                m[1],
                0,
                0,
                `<${id}>`,
                1,
                id.length + 1,
                1000,
                batch,
                k,
                tokenRemap.buf,
                conversationRemap.buf,
              );
            });
          }
          // unprepared checks tokens and that conversations are exactly the (contact, id) pairs;
          // lone surrogates become U+FFFD, as every string column renders them
          const m = unprepared(b.build()).messages;
          // ids as added: own messages' whole strings, the reader's from inside the batch's string
          assert.deepEqual(
            m.id,
            all.map((_, i) => `m${i + 1}`),
          );
          assert.deepEqual(
            m.content,
            all.map(([content]) => content.toWellFormed()),
          );
          assert.deepEqual(
            m.conversationId,
            all.map(([, , conv]) => conv),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  test('reserve (room made at once, as the import does before the reader part) changes nothing it holds', () => {
    for (const fraction of [0, 0.01, 1.05, 7]) {
      const plain = builder();
      const reserved = builder();
      for (let i = 0; i < 2500; i++) {
        if (i === 700) reserved.reserve(fraction);
        for (const b of [plain, reserved])
          b.addResolved(i % 2, i % 3, i % 2, `m${i}é`, `cv${i % 5}`, `w${i % 7} ção`, 1000 + i);
      }
      assert.deepEqual(unprepared(reserved.build()), unprepared(plain.build()));
    }
  });

  test('grows past its first columns; a builder without prepareText keeps the content and refuses prepared text', () => {
    const b = builder();
    for (let i = 0; i < 3000; i++) b.addResolved(i % 2, 0, 0, `m${i}`, `cv${i % 5}`, `w${i % 7} pedido`, 1000);
    const data = b.build();
    assert.equal(data.prepared!.seqStart[3000], 6000);
    const m = unprepared(data).messages;
    assert.equal(m.content[2999], 'w3 pedido');
    assert.equal(m.conversationId[2999], 'cv4');
    // 5 ids under 2 contacts: i % 2 and i % 5 meet in all 10 pairs
    assert.equal(data.prepared!.conversations.size, 10);
    const plain = new OrgDataBuilder(ORG);
    plain.addResolved(0, 0, 0, 'm', 'cv', 'kept', 1000);
    assert.equal(plain.build().prepared, undefined);
    assert.deepEqual(plain.build().messages.content, ['kept']);
    assert.throws(() => plain.internToken('x'), /without `prepareText`/);
  });
});
