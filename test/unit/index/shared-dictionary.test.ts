/** The shared dictionaries of a loaded index answer exactly as the Maps of the built index. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  buildTokenTable,
  SharedPairDictionary,
  SharedTokenDictionary,
  sortPairs,
} from '../../../src/index/shared-dictionary.js';

/** The token column flattenIndex writes: UTF-8 of each token, by id. */
function column(tokens: string[]): { bytes: Uint8Array; offsets: Uint32Array } {
  const offsets = new Uint32Array(tokens.length + 1);
  const parts = tokens.map((t) => Buffer.from(t, 'utf8'));
  for (let t = 0; t < tokens.length; t++) offsets[t + 1] = offsets[t] + parts[t].length;
  return { bytes: new Uint8Array(Buffer.concat(parts)), offsets };
}

function dictionary(tokens: string[]): SharedTokenDictionary {
  const { bytes, offsets } = column(tokens);
  return new SharedTokenDictionary(bytes, offsets, buildTokenTable(bytes, offsets));
}

// letters and digits of several scripts and planes, as the tokenizer keeps them
const letter = fc.constantFrom(...'abcxyz019çãéßσςиж中文한😀𝒜'.match(/./gu)!);
const token = fc.array(letter, { minLength: 1, maxLength: 6 }).map((cs) => cs.join(''));

test('every token is found with its id, and other strings are not (fast-check)', () => {
  fc.assert(
    fc.property(fc.uniqueArray(token, { maxLength: 300 }), fc.array(token, { maxLength: 50 }), (tokens, probes) => {
      const map = new Map(tokens.map((t, id) => [t, id]));
      const shared = dictionary(tokens);
      assert.equal(shared.size, map.size);
      for (const t of tokens) assert.equal(shared.get(t), map.get(t), t);
      for (const p of probes) assert.equal(shared.get(p), map.get(p), p);
    }),
    { numRuns: 500 },
  );
});

test('prefixes, extensions, the empty string, lone surrogates and long strings are not tokens', () => {
  const shared = dictionary(['pedido', 'pedidos', 'ab', '😀']);
  assert.equal(shared.get('pedido'), 0);
  assert.equal(shared.get('pedidos'), 1);
  assert.equal(shared.get('pedid'), undefined);
  assert.equal(shared.get('pedidoss'), undefined);
  assert.equal(shared.get(''), undefined);
  assert.equal(shared.get('\ud83d'), undefined); // the high half of 😀 alone
  assert.equal(shared.get('\ude00'), undefined);
  assert.equal(shared.get('😀'), 3);
  assert.equal(shared.get('x'.repeat(5000)), undefined);
  assert.equal(dictionary([]).get('a'), undefined);
});

test('the table is filled to three quarters at most, and every token and miss is answered at the fullest', () => {
  // 8 slots at the least; 6 and 49,152 tokens fill theirs to three quarters, one more takes the next size
  for (const [tokens, slots] of [
    [3, 8],
    [6, 8],
    [7, 16],
    [12, 16],
    [13, 32],
    [44_113, 65_536],
    [49_152, 65_536],
    [49_153, 131_072],
  ] as const) {
    const words = Array.from({ length: tokens }, (_, i) => `w${i}`);
    const { bytes, offsets } = column(words);
    const table = buildTokenTable(bytes, offsets);
    assert.equal(table.length, slots, `${tokens} tokens`);
    if (tokens > 100) continue;
    const shared = new SharedTokenDictionary(bytes, offsets, table);
    for (let i = 0; i < tokens; i++) assert.equal(shared.get(`w${i}`), i);
    for (let i = tokens; i < tokens + 50; i++) assert.equal(shared.get(`w${i}`), undefined);
  }
});

test('16-bit slots while every token id + 1 fits, 32-bit from 65,535 tokens on; both answer every token', () => {
  for (const [tokens, type] of [
    [0, Uint16Array],
    [44_113, Uint16Array],
    [65_534, Uint16Array],
    [65_535, Uint32Array],
    [70_000, Uint32Array],
  ] as const) {
    const words = Array.from({ length: tokens }, (_, i) => `w${i}`);
    const { bytes, offsets } = column(words);
    const table = buildTokenTable(bytes, offsets);
    assert.equal(table.constructor, type, `${tokens} tokens`);
    const shared = new SharedTokenDictionary(bytes, offsets, table);
    // the largest ids (their slot values at the type's top) and a few others
    for (const i of [0, 1, tokens >> 1, tokens - 2, tokens - 1].filter((i) => i >= 0 && i < tokens))
      assert.equal(shared.get(`w${i}`), i, `w${i} of ${tokens}`);
    assert.equal(shared.get(`w${tokens}`), undefined);
  }
  // a table given of the other type is refused, not filled with ids it cannot hold
  const { bytes, offsets } = column(['a', 'b']);
  assert.throws(() => buildTokenTable(bytes, offsets, new Uint32Array(8)), /a token table of Uint16Array/);
});

test('the table lives in shared memory, and pairs are found by key after sorting (fast-check)', () => {
  const { bytes, offsets } = column(['a', 'b']);
  assert.ok(buildTokenTable(bytes, offsets).buffer instanceof SharedArrayBuffer);
  fc.assert(
    fc.property(fc.uniqueArray(fc.nat(2 ** 40), { maxLength: 200 }), fc.array(fc.nat(2 ** 40)), (keys, probes) => {
      const values = keys.map((_, i) => 1000 + i);
      const map = new Map(keys.map((k, i) => [k, values[i]]));
      const sorted = sortPairs(Float64Array.from(keys), Uint32Array.from(values));
      const shared = new SharedPairDictionary(sorted.keys, sorted.values);
      assert.equal(shared.size, map.size);
      for (const k of [...keys, ...probes]) assert.equal(shared.get(k), map.get(k));
    }),
    { numRuns: 300 },
  );
});
