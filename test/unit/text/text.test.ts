import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildIndex } from '../../../src/index/build.js';
import { messageTokenIds } from '../../../src/index/token-seq.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { executeSearch } from '../../../src/query/execute.js';
import { resolveTerms } from '../../../src/request/terms.js';
import { analyzeTerm, codePointLength, tokensOf } from '../../../src/text/analyze.js';
import { hasToken, internTokens } from '../../../src/text/fast-tokens.js';
import { TokenInterner } from '../../../src/text/token-interner.js';
import { normalize, TOKEN } from '../../../src/text/normalize.js';
import { testSeed } from '../../helpers/seed.js';
import { bareContact } from '../../helpers/one-contact.js';

const SEED = testSeed('TEXT_SEED', 'test/unit/text/text.test.ts');

/** CONTRACT 1 as written, the oracle of the one-pass tokenizer: maximal \p{L}/\p{N} runs of N(text). */
function tokenize(text: string): string[] {
  return normalize(text).match(TOKEN) ?? [];
}

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

test('tokensOf (the one tokenizer, of build and query) and hasToken agree with tokenize for every code point, in context', () => {
  // Every code point alone, between letters, doubled between capitals, after a separator, and
  // between accented letters; plus the hard spots above.
  const mismatches: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const ch = String.fromCodePoint(cp);
    for (const text of [ch, `a${ch}b`, `A${ch}${ch}Z`, `x ${ch}`, `É${ch}ç`]) {
      const want = tokenize(text),
        got = tokensOf(text);
      if (got.length !== want.length || got.some((t, i) => t !== want[i]) || hasToken(text) !== want.length > 0) {
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

test('tokensOf and hasToken agree with tokenize on random text (fast-check)', () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
      const text = parts.join('');
      assert.deepEqual(tokensOf(text), tokenize(text));
      assert.equal(hasToken(text), tokenize(text).length > 0);
    }),
    { seed: SEED, numRuns: 5000 },
  );
});

test('internTokens gives the ids a Map over tokenize would, across messages, and its map names them (fast-check)', () => {
  fc.assert(
    fc.property(fc.array(fc.array(piece, { maxLength: 40 }), { maxLength: 30 }), (messages) => {
      const interner = new TokenInterner();
      const expected = new Map<string, number>();
      for (const parts of messages) {
        const text = parts.join('');
        const ids: number[] = [];
        internTokens(text, interner, ids);
        const want = tokenize(text).map((t) => {
          let id = expected.get(t);
          if (id === undefined) expected.set(t, (id = expected.size));
          return id;
        });
        assert.deepEqual(ids, want, JSON.stringify(text));
        // tokensOf after internTokens: the shared scan state is left as tokensOf needs it
        assert.deepEqual(tokensOf(text), tokenize(text));
      }
      assert.equal(interner.size, expected.size);
      assert.deepEqual([...interner.toMap()], [...expected]);
    }),
    { seed: SEED, numRuns: 2000 },
  );
});

test('TokenInterner: many tokens, long tokens and hash neighbours keep distinct ids', () => {
  const interner = new TokenInterner();
  const ids: number[] = [];
  const words: string[] = [];
  // decimal digits, then q's: a word names its i, so no two are the same
  for (let i = 0; i < 50000; i++) words.push(String(i) + (i % 7 === 0 ? 'q'.repeat(i % 300) : ''));
  words.push('y'.repeat(70000));
  internTokens(words.join(' '), interner, ids);
  assert.deepEqual(
    ids,
    words.map((_, i) => i),
  );
  const again: number[] = [];
  internTokens(words.reverse().join(' '), interner, again);
  assert.deepEqual(
    again,
    words.map((_, i) => words.length - 1 - i),
  );
  assert.deepEqual([...interner.toMap().keys()], words.reverse());
});

/** CONTRACT 2 steps 2-4 as written, with code points counted by the string iterator. */
function literalTerm(raw: string, max: number): { text: string; codePoints: number } | null {
  let text = normalize(raw).trim().replace(/\s+/g, ' ');
  if (Array.from(text).length > max) text = Array.from(text).slice(0, max).join('').trim();
  const codePoints = Array.from(text).length;
  return codePoints < 2 || tokenize(text).length === 0 ? null : { text, codePoints };
}

test('analyzeTerm: normalized text and code-point length of a term, in one call (CONTRACT 2)', () => {
  assert.deepEqual(analyzeTerm('  Segunda \t\n VIA ', 200), { text: 'segunda via', codePoints: 11 });
  assert.equal(analyzeTerm('!!', 200), null);
  assert.equal(analyzeTerm('é', 200), null);
  // a cut that ends on a space drops it: 199 code points left (an emoji is one code point, two units)
  assert.deepEqual(analyzeTerm('AB' + '😀'.repeat(197) + ' abc', 200), {
    text: 'ab' + '😀'.repeat(197),
    codePoints: 199,
  });
  // the cut leaves no token: discarded
  assert.equal(analyzeTerm('😀'.repeat(199) + ' abc', 200), null);
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 40 }), fc.integer({ min: 1, max: 12 }), (parts, max) => {
      const raw = parts.join('');
      assert.deepEqual(analyzeTerm(raw, max), literalTerm(raw, max));
      const t = analyzeTerm(raw, Number.MAX_SAFE_INTEGER);
      if (t !== null) assert.equal(t.codePoints, codePointLength(t.text));
    }),
    { seed: SEED, numRuns: 3000 },
  );
});

const SRC = path.join(import.meta.dirname, '..', '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

test('build and query tokens come from the same function: text/analyze.ts tokensOf', () => {
  // Where: the index build and the term view import the one tokenizer, and nothing outside
  // src/text/ normalizes or tokenizes on its own.
  // (the build takes the same pass's tokens as ids: internTokens, checked against tokenize above)
  for (const [user, name] of [
    ['index/build.ts', 'internTokens'],
    ['query/term-view.ts', 'tokensOf'],
  ])
    assert.ok(
      readFileSync(path.join(SRC, user), 'utf8').includes(`import { ${name} } from '../text/analyze.js';`),
      `${user} must import ${name} from text/analyze.ts`,
    );
  const strays: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const rel = path.relative(SRC, file);
    if (rel.startsWith('text' + path.sep)) continue;
    const code = readFileSync(file, 'utf8');
    for (const sign of ['text/normalize.js', 'text/fast-tokens.js', '\\p{L}', '\\p{M}', "normalize('NFKD')"])
      if (code.includes(sign)) strays.push(`${rel}: ${sign}`);
  }
  assert.deepEqual(strays, []);

  // What: a message's tokens in the built index are the tokens the query side gives a term of
  // the same text, and that term finds the message.
  const ORG = '0a0a0a0a-0000-4000-8000-00000000000a';
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 30 }), (parts) => {
      const content = parts.join('');
      const b = new OrgDataBuilder(ORG);
      const contact = bareContact(ORG, '0a0a0a0a-0000-4000-8000-0000000000c1');
      b.addContact(contact);
      const sentAt = '2025-01-01T00:00:00.000Z';
      b.addMessage(
        {
          id: 'm1',
          organization_id: ORG,
          contact_id: contact.id,
          conversation_id: 'cv',
          channel: 'email',
          direction: 'inbound',
          content,
          sent_at: sentAt,
        },
        Date.parse(sentAt),
      );
      const index = buildIndex(b.build());
      const text = [...(index.tokenIds as Map<string, number>).keys()];
      const built = messageTokenIds(index, 0).map((id) => text[id]);
      assert.deepEqual(built, tokensOf(content));
      const term = analyzeTerm(content, Number.MAX_SAFE_INTEGER);
      if (term === null) return;
      // the tokens the term view looks up for this term
      assert.deepEqual(tokensOf(term.text), built);
      const res = executeSearch(index, {
        organizationId: ORG,
        terms: [term.text],
        match: 'any',
        direction: 'all',
        channel: null,
        from: null,
        to: null,
        limit: 1,
        offset: 0,
        messagesLimit: 1,
      });
      assert.equal(res.pagination.count, 1, JSON.stringify(content));
    }),
    { seed: SEED, numRuns: 500 },
  );
});
