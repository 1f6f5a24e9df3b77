/**
 * OrgDataBuilder with `prepareText` (the import): the text it prepares, its own and a reader
 * thread's (addPrepared, token ids remapped), reads back as the contents and their tokensOf.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jsonEscaped, StringColumnBuilder } from '../../../src/index/string-column.js';
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
  b.addContact({ id: 'c', organization_id: ORG, name: null, phone: null, email: null, avatar_url: null, source: null });
  return b;
}

/** What the reader thread does for a batch: its own interner, escaped content, new tokens interned into `b` in order. */
function readerBatch(b: OrgDataBuilder, reader: TokenInterner, remap: Growable, contents: string[]) {
  const tokens = new Growable(16);
  const tokenEnds: number[] = [];
  const column = new StringColumnBuilder();
  for (const content of contents) {
    internTokens(content, reader, tokens);
    tokenEnds.push(tokens.length);
    column.push(jsonEscaped(content));
  }
  for (let id = remap.length; id < reader.size; id++) remap.push(b.internToken(reader.token(id)));
  const { bytes, offsets } = column.build();
  return {
    tokens: tokens.toArray(),
    tokenEnds: Uint32Array.from(tokenEnds),
    content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    contentOffsets: offsets,
  };
}

describe('OrgDataBuilder prepareText', () => {
  test("its own messages and a reader thread's read back as their contents and tokens", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(text, { minLength: 1, maxLength: 4 }), fc.boolean()), { maxLength: 15 }),
        (groups) => {
          const b = builder();
          const reader = new TokenInterner();
          const remap = new Growable(16);
          const all: string[] = [];
          for (const [contents, fromReader] of groups) {
            if (!fromReader) {
              for (const content of contents) b.addResolved(0, 0, 0, `m${all.push(content)}`, 'cv', content, 1000);
              continue;
            }
            const batch = readerBatch(b, reader, remap, contents);
            contents.forEach((content, k) =>
              b.addPrepared(0, 0, 0, `m${all.push(content)}`, 'cv', 1000, batch, k, remap.buf),
            );
          }
          // lone surrogates become U+FFFD, as every string column renders them
          assert.deepEqual(
            unprepared(b.build()).messages.content,
            all.map((s) => s.toWellFormed()),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  test('grows past its first columns; a builder without prepareText keeps the content and refuses prepared text', () => {
    const b = builder();
    for (let i = 0; i < 3000; i++) b.addResolved(0, 0, 0, `m${i}`, 'cv', `w${i % 7} pedido`, 1000);
    const data = b.build();
    assert.equal(data.prepared!.seqStart[3000], 6000);
    assert.equal(unprepared(data).messages.content[2999], 'w3 pedido');
    const plain = new OrgDataBuilder(ORG);
    plain.addResolved(0, 0, 0, 'm', 'cv', 'kept', 1000);
    assert.equal(plain.build().prepared, undefined);
    assert.deepEqual(plain.build().messages.content, ['kept']);
    assert.throws(() => plain.internToken('x'), /without `prepareText`/);
  });
});
