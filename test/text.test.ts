import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalize, tokenize } from '../src/text/normalize.js';
import { codePointLength, resolveTerms } from '../src/query/terms.js';

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
  assert.deepEqual(resolveTerms('  Segunda   VIA ', 'a;bb,\r\nCc\rdd\nBB', ['x,y']), ['segunda via', 'bb', 'cc', 'dd', 'x,y']);
  assert.deepEqual(resolveTerms(null, 'ab，cd', []), ['ab,cd']);
  assert.deepEqual(resolveTerms('!!', null, ['a', 'é']), []);
  const many = Array.from({ length: 12 }, (_, i) => 'w' + i).join(',');
  assert.equal(resolveTerms(null, many, []).length, 10);
  const long = '😀'.repeat(150) + ' ' + 'a'.repeat(100);
  const [t] = resolveTerms(null, null, ['x' + long]);
  assert.equal(codePointLength(t), 200);
  assert.deepEqual(resolveTerms('ab ' + ' '.repeat(300), null, []), ['ab']);
});
