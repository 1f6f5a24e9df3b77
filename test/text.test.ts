import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { tokensOf } from '../src/text/fast-tokens.js';
import { normalize, tokenize } from '../src/text/normalize.js';
import { codePointLength, resolveTerms } from '../src/query/terms.js';
import { testSeed } from './helpers/seed.js';

const SEED = testSeed('TEXT_SEED', 'test/text.test.ts');

test('N() follows CONTRACT 1 examples and hard spots', () => {
  assert.equal(normalize('Preço ÁGUA ﬁm'), 'preco agua fim');
  assert.deepEqual(tokenize('Olá!! O pedido #123-B'), ['ola', 'o', 'pedido', '123', 'b']);
  // combining marks written separately
  assert.equal(normalize('cafe\u0301'), 'cafe');
  // fullwidth forms fold to ASCII under NFKD
  assert.deepEqual(tokenize('ＰＥＤＩＤＯ１２'), ['pedido12']);
  // Greek final sigma: lower case of a whole word uses ς at the end
  assert.equal(normalize('ΟΔΟΣ'), 'οδος'.slice(0, 3) + 'ς');
  // Turkish dotted I loses its dot as a mark
  assert.equal(normalize('İstanbul'), 'istanbul');
  // emoji separate words, digits inside words stay
  assert.deepEqual(tokenize('boleto🎉pago a2b'), ['boleto', 'pago', 'a2b']);
});

test('terms: split, normalize, discard, cut, dedupe, first 10 (CONTRACT 2, 10)', () => {
  assert.deepEqual(resolveTerms('  Segunda   VIA ', 'a;bb,\r\nCc\rdd\nBB', ['x,y']), [
    'segunda via',
    'bb',
    'cc',
    'dd',
    'x,y',
  ]);
  assert.deepEqual(resolveTerms(null, 'ab，cd', []), ['ab,cd']);
  assert.deepEqual(resolveTerms('!!', null, ['a', 'é']), []);
  const many = Array.from({ length: 12 }, (_, i) => 'w' + i).join(',');
  assert.equal(resolveTerms(null, many, []).length, 10);
  const long = '😀'.repeat(150) + ' ' + 'a'.repeat(100);
  const [t] = resolveTerms(null, null, ['x' + long]);
  assert.equal(codePointLength(t), 200);
  assert.deepEqual(resolveTerms('ab ' + ' '.repeat(300), null, []), ['ab']);
});

test("tokensOf (the build's one-pass tokenizer) equals tokenize for every code point, in context", () => {
  // Every code point alone, between letters, doubled between capitals, after a separator, and
  // between accented letters; plus the hard spots above.
  const mismatches: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const ch = String.fromCodePoint(cp);
    for (const text of [ch, `a${ch}b`, `A${ch}${ch}Z`, `x ${ch}`, `É${ch}ç`]) {
      const want = tokenize(text),
        got = tokensOf(text);
      if (got.length !== want.length || got.some((t, i) => t !== want[i])) {
        if (mismatches.length < 10)
          mismatches.push(
            `U+${cp.toString(16)} in ${JSON.stringify(text)}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`,
          );
      }
    }
  }
  assert.deepEqual(mismatches, []);
  for (const text of [
    'Preço ÁGUA ﬁm',
    'Olá!! O pedido #123-B',
    'cafe\u0301s',
    'ＰＥＤＩＤＯ１２',
    'ΟΔΟΣ σΣ',
    'İstanbul',
    'boleto🎉pago a2b',
    '½ ㎏ ǅ ß ﬃx',
    '𝐀𝐁c 𝒜',
    '\ud800x\udc00',
    'Σ\udc00',
    'a𝐀Σ',
    'Σ𝐀',
    'a'.repeat(5000),
    'Á'.repeat(5000) + ' b',
  ]) {
    assert.deepEqual(tokensOf(text), tokenize(text), JSON.stringify(text.slice(0, 40)));
  }
});

test('tokensOf equals tokenize on random text (fast-check)', () => {
  const piece = fc.oneof(
    fc.constantFrom(
      'a',
      'Z',
      '7',
      ' ',
      '-',
      'ç',
      'Ã',
      '\u0301',
      'ﬁ',
      '½',
      'Σ',
      'ς',
      'İ',
      'ß',
      '🎉',
      '𝐀',
      '\ud800',
      '\udc00',
      'Ｐ',
      '٣',
      '한',
      'ǅ',
      '\n',
    ),
    fc.string({ unit: 'grapheme', maxLength: 3 }),
    fc.string({ unit: 'binary', maxLength: 3 }),
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
      const text = parts.join('');
      assert.deepEqual(tokensOf(text), tokenize(text));
    }),
    { seed: SEED, numRuns: 5000 },
  );
});
