import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSearchParams } from '../../../src/request/parse-params.js';

const ORG = '0A0A0A0A-0000-4000-8000-00000000000F';
const ok = (q: string) => {
  const r = parseSearchParams(q);
  assert.ok(r.ok, JSON.stringify(r));
  return r.request;
};
const problems = (q: string) => {
  const r = parseSearchParams(q);
  assert.ok(!r.ok, 'expected problems for ' + q);
  return r.details.map((d) => d.parameter);
};

test('defaults and echo', () => {
  const r = ok(`organization_id=${ORG}&q=Pedido`);
  assert.deepEqual(r, {
    organizationId: ORG.toLowerCase(),
    terms: ['pedido'],
    match: 'any',
    direction: 'inbound',
    channel: null,
    from: null,
    to: null,
    limit: 50,
    offset: 0,
    messagesLimit: 3,
  });
});

test('form decoding, empty values, unknown and repeated parameters', () => {
  assert.deepEqual(ok(`organization_id=${ORG}&q=ol%C3%A1+mundo&&Limit=x&limit=&foo`).terms, ['ola mundo']);
  assert.deepEqual(problems(`organization_id=${ORG}&q=%zz`), ['q']);
  // raw bytes that are not UTF-8 reach the parser as U+FFFD (uWS): malformed, like %E9
  assert.deepEqual(problems(`organization_id=${ORG}&q=caf\uFFFD`), ['q']);
  assert.deepEqual(problems(`organization_id=${ORG}&q=caf%E9`), ['q']);
  assert.deepEqual(problems(`organization_id=${ORG}&q=ab&limit=1&limit=2`), ['limit']);
  assert.deepEqual(ok(`organization_id=${ORG}&keyword=a%2Cb&keyword=cd`).terms, ['a,b', 'cd']);
});

test('numbers: digits only, ranges, leading zeros', () => {
  assert.equal(ok(`organization_id=${ORG}&q=ab&limit=007`).limit, 7);
  for (const bad of ['1.5', '%2B1', '+1', '1e2', '0', '101', '-1'])
    assert.deepEqual(problems(`organization_id=${ORG}&q=ab&limit=${bad}`), ['limit'], bad);
  assert.equal(ok(`organization_id=${ORG}&q=ab&offset=9007199254740991`).offset, 2 ** 53 - 1);
  assert.deepEqual(problems(`organization_id=${ORG}&q=ab&offset=9007199254740992`), ['offset']);
  assert.deepEqual(problems(`organization_id=${ORG}&q=ab&messages_limit=21`), ['messages_limit']);
});

test('dates: expansion, fractions, offsets, impossible dates, order', () => {
  const r = ok(`organization_id=${ORG}&q=ab&from=2024-06-01&to=2024-06-01T10:30`);
  assert.equal(new Date(r.from!).toISOString(), '2024-06-01T00:00:00.000Z');
  assert.equal(new Date(r.to!).toISOString(), '2024-06-01T10:30:00.000Z');
  assert.equal(new Date(ok(`organization_id=${ORG}&q=ab&to=2024-06-01`).to!).toISOString(), '2024-06-01T23:59:59.999Z');
  assert.equal(
    new Date(ok(`organization_id=${ORG}&q=ab&from=2024-06-01T10:00:00.9%2B02:00`).from!).toISOString(),
    '2024-06-01T08:00:00.900Z',
  );
  assert.equal(
    new Date(ok(`organization_id=${ORG}&q=ab&from=2024-06-01T10:00:00.123456Z`).from!).toISOString(),
    '2024-06-01T10:00:00.123Z',
  );
  for (const bad of [
    '2025-02-30',
    '2024-06-01T10:00:60Z',
    '2024-06-01t10:00Z',
    '2024-06-01T10:00z',
    '2024-6-1',
    'yesterday',
  ])
    assert.deepEqual(problems(`organization_id=${ORG}&q=ab&from=${bad}`), ['from'], bad);
  assert.deepEqual(problems(`organization_id=${ORG}&q=ab&from=2024-06-02&to=2024-06-01`), ['from']);
});

test('every problem at once, in spec order', () => {
  assert.deepEqual(
    problems('organization_id=nope&match=ALL&direction=in&channel=sms&limit=0&offset=x&messages_limit=99'),
    ['organization_id', 'q', 'match', 'direction', 'channel', 'limit', 'offset', 'messages_limit'],
  );
  assert.deepEqual(problems(''), ['organization_id', 'q']);
  assert.deepEqual(problems(`organization_id=${ORG}&q=${'a'.repeat(201)}`), ['q']);
  assert.deepEqual(problems(`organization_id=${ORG}&keywords=${'é'.repeat(1001)}`), ['keywords']);
  assert.equal(ok(`organization_id=${ORG}&keywords=${'é'.repeat(997)}%2Cab`).terms.length, 2);
});
