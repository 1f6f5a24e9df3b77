/** Hand-written cases for the brute-force reference, taken from the contract's own examples. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Contact, MessageLine } from '../../../src/model/records.js';
import type { SearchRequest } from '../../../src/request/search-request.js';
import { searchRequest } from '../../helpers/e2e.js';
import {
  referenceMatches,
  referenceNormalize,
  referenceSearch,
  referenceTerms,
  referenceTokens,
} from '../../reference/brute-force.js';

const ORG = '0a0a0a0a-0000-4000-8000-000000000001';
const OTHER = '0b0b0b0b-0000-4000-8000-000000000002';

function matches(term: string, text: string): boolean {
  return referenceMatches(referenceTokens(term), referenceTokens(text));
}

describe('reference N() and tokens (CONTRACT 1)', () => {
  it('normalizes the contract example', () => {
    assert.equal(referenceNormalize('Preço ÁGUA ﬁm'), 'preco agua fim');
  });
  it('tokenizes the contract example', () => {
    assert.deepEqual(referenceTokens('Olá!! O pedido #123-B'), ['ola', 'o', 'pedido', '123', 'b']);
  });
  it('Greek final sigma follows toLowerCase context over the whole text', () => {
    assert.equal(referenceNormalize('ΟΔΟΣ'), 'οδος');
    assert.deepEqual(referenceTokens('ΟΔΟΣ ΚΑΙ ΣΑΣ'), ['οδος', 'και', 'σας']);
    assert.equal(matches('ΟΔΟΣ', 'η ΟΔΟΣ μας'), true);
    // A medial sigma typed by the user is a different code point: no match.
    assert.equal(matches('οδοσ', 'η ΟΔΟΣ μας'), false);
  });
  it('Turkish dotted capital I loses its dot (NFKD then Mark removal)', () => {
    assert.equal(referenceNormalize('İSTANBUL'), 'istanbul');
    assert.equal(referenceNormalize('İ'), 'i');
    assert.equal(matches('istanbul', 'Voo para İSTANBUL'), true);
  });
  it('ligatures and fullwidth letters decompose', () => {
    assert.equal(referenceNormalize('ﬁ'), 'fi');
    assert.deepEqual(referenceTokens('ｐｅｄｉｄｏ １２３'), ['pedido', '123']);
    assert.equal(matches('fim', 'o ﬁm'), true);
  });
  it('emoji separate tokens', () => {
    assert.deepEqual(referenceTokens('boleto😀pago👍🏽ok'), ['boleto', 'pago', 'ok']);
    assert.equal(matches('boleto pago', 'boleto😀pago'), true);
  });
  it('combining marks are dropped, precomposed and decomposed forms agree', () => {
    assert.deepEqual(referenceTokens('cafe\u0301 café CAFÉ'), ['cafe', 'cafe', 'cafe']);
  });
  it('digits inside words stay in one token', () => {
    assert.deepEqual(referenceTokens('abc123def 2ª'), ['abc123def', '2a']);
  });
});

describe('reference matching (CONTRACT 1)', () => {
  it('one-token term is a whole-word match', () => {
    assert.equal(matches('pedido', 'Meu PEDIDO chegou'), true);
    assert.equal(matches('pedido', 'pedidos'), false);
    assert.equal(matches('pedido', 'despedido'), false);
  });
  it('a phrase is a contiguous token run', () => {
    assert.equal(matches('segunda via', 'a 2a, segunda-via do boleto'), true);
    assert.equal(matches('segunda via', 'segunda a via'), false);
    assert.equal(matches('segunda-via', 'segunda via'), true);
  });
});

describe('reference terms (CONTRACT 2, 10)', () => {
  it('merges q, keywords, keyword in order', () => {
    assert.deepEqual(referenceTerms('Preço', 'água;fim', ['Boleto', 'preco']), ['preco', 'agua', 'fim', 'boleto']);
  });
  it('splits keywords on CRLF, LF, CR, comma and semicolon', () => {
    assert.deepEqual(referenceTerms(null, 'pedido\r\nboleto;agua,\n\rfim\rvia', []), [
      'pedido',
      'boleto',
      'agua',
      'fim',
      'via',
    ]);
  });
  it('a fullwidth comma does not split (split before N)', () => {
    assert.deepEqual(referenceTerms(null, 'agua，fim', []), ['agua,fim']);
  });
  it('q is one term even with separators inside', () => {
    assert.deepEqual(referenceTerms('a, b; c', null, []), ['a, b; c']);
  });
  it('trims and collapses white space', () => {
    assert.deepEqual(referenceTerms('  Segunda \t\n\u00a0 VIA  ', null, []), ['segunda via']);
  });
  it('discards short and token-less terms after N()', () => {
    assert.deepEqual(referenceTerms('a', ' !! ,x,İ,ﬁ, ab ', ['😀😀', '', ' ']), ['fi', 'ab']);
  });
  it('removes duplicates after normalization, first kept', () => {
    assert.deepEqual(referenceTerms('ÁGUA', 'agua, Agua ,água', ['AGUA']), ['agua']);
  });
  it('keeps the first 10 terms', () => {
    const kw = Array.from({ length: 14 }, (_, i) => `t${i}`).join(',');
    assert.deepEqual(
      referenceTerms(null, kw, []),
      Array.from({ length: 10 }, (_, i) => `t${i}`),
    );
  });
  it('dedupe runs before the 10-term cut', () => {
    const kw = ['aa', 'aa', 'bb', 'cc', 'dd', 'ee', 'ff', 'gg', 'hh', 'ii', 'jj', 'kk'].join(';');
    assert.deepEqual(referenceTerms(null, kw, []), ['aa', 'bb', 'cc', 'dd', 'ee', 'ff', 'gg', 'hh', 'ii', 'jj']);
  });
  it('cuts to 200 code points (astral characters count once), then trims', () => {
    const astral = '𝒜'.repeat(250); // 𝒜 is NFKD-compatible with A, so N() gives 'a'
    assert.deepEqual(referenceTerms(astral, null, []), ['a'.repeat(200)]);
    const emojiWord = 'ab' + '😀'.repeat(198) + 'x'.repeat(10);
    assert.equal(Array.from(referenceTerms(emojiWord, null, [])[0]).length, 200);
    const spaced = 'x'.repeat(199) + ' yyy';
    assert.deepEqual(referenceTerms(null, null, [spaced]), ['x'.repeat(199)]);
  });
  it('the cut is after normalization (N can lengthen: ﬁ is 2 code points)', () => {
    const t = referenceTerms('ﬁ'.repeat(150), null, [])[0];
    assert.equal(t, 'fi'.repeat(100));
  });
  it('a term that cuts to the same string as another is a duplicate', () => {
    const a = 'z'.repeat(200);
    assert.deepEqual(referenceTerms(a + 'q', null, [a + 'w']), [a]);
  });
});

// ---- referenceSearch on a small hand-made organization ----

function contact(id: string, org = ORG): Contact {
  return {
    id,
    organization_id: org,
    name: `n-${id}`,
    phone: '+5511999990000',
    email: null,
    avatar_url: null,
    source: 'whatsapp',
  };
}

let seq = 0;
function msg(contactId: string, content: string, sentAt: string, extra: Partial<MessageLine> = {}): MessageLine {
  seq++;
  return {
    id: `m${seq}`,
    organization_id: ORG,
    contact_id: contactId,
    conversation_id: `cv-${contactId}`,
    channel: 'whatsapp',
    direction: 'inbound',
    content,
    sent_at: sentAt,
    ...extra,
  };
}

function req(terms: string[], over: Partial<SearchRequest> = {}): SearchRequest {
  return searchRequest(ORG, terms, over);
}

const C = ['c9', 'c10', 'c100'].map((id) => contact(id));
const OTHER_C = contact('x1', OTHER);
const M: MessageLine[] = [
  msg('c9', 'Meu PEDIDO chegou', '2024-01-01T10:00:00-03:00'), // 13:00Z
  msg('c9', 'pedidos e despedido', '2024-01-02T10:00:00Z'),
  msg('c9', 'boleto: segunda-via', '2024-01-03T10:00:00Z', { conversation_id: 'cv-other' }),
  msg('c10', 'o pedido', '2024-01-01T13:00:00Z'), // same instant as c9's first
  msg('c10', 'segunda via do pedido', '2024-01-01T13:00:00.000+00:00', { direction: 'outbound' }),
  msg('c100', 'pedido por email', '2024-01-01T12:00:00Z', { channel: 'email' }),
  { ...msg('x1', 'pedido de outra org', '2025-01-01T00:00:00Z'), organization_id: OTHER },
];
const ALL_C = [...C, OTHER_C];

describe('reference search (CONTRACT 3)', () => {
  it('default inbound, whole-word, ties by contact id with plain string order', () => {
    const r = referenceSearch(ALL_C, M, req(['pedido']));
    // c10 and c9 tie at 13:00Z; 'c10' < 'c9' as strings.
    assert.deepEqual(
      r.data.map((d) => d.contact.id),
      ['c10', 'c9', 'c100'],
    );
    assert.equal(r.data[1].match_count, 1);
    assert.equal(r.data[1].first_matched_at, '2024-01-01T13:00:00.000Z');
    assert.deepEqual(r.pagination, { limit: 50, offset: 0, count: 3, has_more: false, next_offset: null });
    assert.deepEqual(r.query, {
      organization_id: ORG,
      terms: ['pedido'],
      match: 'any',
      direction: 'inbound',
      channel: null,
      from: null,
      to: null,
    });
  });
  it('direction all, messages ordered by sent_at desc then id asc', () => {
    const r = referenceSearch(ALL_C, M, req(['pedido'], { direction: 'all' }));
    const c10 = r.data.find((d) => d.contact.id === 'c10')!;
    assert.equal(c10.match_count, 2);
    assert.deepEqual(
      c10.messages.map((m) => m.id),
      ['m4', 'm5'],
    );
    assert.equal(c10.messages[1].sent_at, '2024-01-01T13:00:00.000Z');
  });
  it('match=all spreads terms over messages of one contact', () => {
    const r = referenceSearch(ALL_C, M, req(['pedido', 'segunda via'], { match: 'all' }));
    assert.deepEqual(
      r.data.map((d) => d.contact.id),
      ['c9'],
    );
    assert.equal(r.data[0].match_count, 2);
    assert.equal(r.data[0].conversations_count, 2);
    assert.equal(r.data[0].last_matched_at, '2024-01-03T10:00:00.000Z');
  });
  it('channel and time range filters are inclusive', () => {
    const at = Date.parse('2024-01-01T12:00:00Z');
    const r = referenceSearch(ALL_C, M, req(['pedido'], { channel: 'email', from: at, to: at }));
    assert.deepEqual(
      r.data.map((d) => d.contact.id),
      ['c100'],
    );
    assert.equal(r.query.from, '2024-01-01T12:00:00.000Z');
    const none = referenceSearch(ALL_C, M, req(['pedido'], { channel: 'email', from: at + 1 }));
    assert.equal(none.pagination.count, 0);
  });
  it('pagination: has_more, next_offset, offset past the end', () => {
    const p1 = referenceSearch(ALL_C, M, req(['pedido'], { limit: 2, messagesLimit: 0 }));
    assert.deepEqual(p1.pagination, { limit: 2, offset: 0, count: 3, has_more: true, next_offset: 2 });
    assert.deepEqual(p1.data[0].messages, []);
    const p2 = referenceSearch(ALL_C, M, req(['pedido'], { limit: 2, offset: 2 }));
    assert.deepEqual(p2.pagination, { limit: 2, offset: 2, count: 3, has_more: false, next_offset: null });
    const past = referenceSearch(ALL_C, M, req(['pedido'], { limit: 2, offset: 9 }));
    assert.deepEqual(past.data, []);
    assert.equal(past.pagination.count, 3);
  });
  it('other organizations never count', () => {
    const r = referenceSearch(ALL_C, M, req(['outra']));
    assert.equal(r.pagination.count, 0);
    const o = referenceSearch(ALL_C, M, req(['outra'], { organizationId: OTHER }));
    assert.deepEqual(
      o.data.map((d) => d.contact.id),
      ['x1'],
    );
  });
  it('renders the full contact and message forms with the contract key order', () => {
    const r = referenceSearch(ALL_C, M, req(['chegou']));
    assert.deepEqual(Object.keys(r), ['data', 'pagination', 'query']);
    assert.deepEqual(Object.keys(r.data[0]), [
      'contact',
      'match_count',
      'conversations_count',
      'first_matched_at',
      'last_matched_at',
      'messages',
    ]);
    assert.deepEqual(Object.keys(r.data[0].contact), [
      'id',
      'organization_id',
      'name',
      'phone',
      'email',
      'avatar_url',
      'source',
    ]);
    assert.deepEqual(Object.keys(r.data[0].messages[0]), [
      'id',
      'conversation_id',
      'channel',
      'direction',
      'content',
      'sent_at',
    ]);
  });
});
