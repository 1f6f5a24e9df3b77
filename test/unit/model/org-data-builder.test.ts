/** OrgDataBuilder with `tokenize`: the tokens it interns (its own, and a reader thread's remapped) spell tokensOf. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Growable } from '../../../src/model/growable.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import type { OrgData } from '../../../src/model/records.js';
import { internTokens, tokensOf } from '../../../src/text/analyze.js';
import { TokenInterner } from '../../../src/text/token-interner.js';

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
  ' ',
  '\u0301',
];
const text = fc
  .array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 6 })), { maxLength: 12 })
  .map((ws) => ws.join(' '));

function builder(): OrgDataBuilder {
  const b = new OrgDataBuilder(ORG, { tokenize: true });
  b.addContact({ id: 'c', organization_id: ORG, name: null, phone: null, email: null, avatar_url: null, source: null });
  return b;
}

function spelled(data: OrgData): string[][] {
  const t = data.tokens!;
  const words = t.interner.tokens();
  assert.equal(t.seqStart.length, data.messages.count + 1);
  return data.messages.content.map((_, i) =>
    [...t.seq.subarray(t.seqStart[i], t.seqStart[i + 1])].map((id) => words[id]),
  );
}

describe('OrgDataBuilder tokenize', () => {
  test("its own interning and a reader thread's remapped ids both spell tokensOf(content)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.boolean()), { maxLength: 40 }), (messages) => {
        const b = builder();
        // a "reader thread": its own interner and id sequence, its new tokens interned into b in order
        const reader = new TokenInterner();
        const remap = new Growable(16);
        messages.forEach(([content, fromReader], i) => {
          if (!fromReader) {
            b.addResolved(0, 0, 0, `m${i}`, 'cv', content, 1000);
            return;
          }
          const ids = new Growable(16);
          const known = reader.size;
          internTokens(content, reader, ids);
          for (let id = known; id < reader.size; id++) remap.push(b.internToken(reader.token(id)));
          b.addResolvedTokens(0, 0, 0, `m${i}`, 'cv', content, 1000, ids.toArray(), 0, ids.length, remap.buf);
        });
        const data = b.build();
        assert.deepEqual(
          spelled(data),
          messages.map(([content]) => tokensOf(content)),
        );
      }),
      { numRuns: 300 },
    );
  });

  test('grows past its first columns; a builder without tokenize has no tokens and refuses read ones', () => {
    const b = builder();
    for (let i = 0; i < 3000; i++) b.addResolved(0, 0, 0, `m${i}`, 'cv', `w${i % 7} pedido`, 1000);
    const data = b.build();
    assert.equal(data.tokens!.seqStart[3000], 6000);
    assert.deepEqual(spelled(data)[2999], ['w3', 'pedido']);
    const plain = new OrgDataBuilder(ORG);
    assert.equal(plain.build().tokens, undefined);
    assert.throws(() => plain.internToken('x'), /without `tokenize`/);
  });
});
