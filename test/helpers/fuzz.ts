/**
 * Fuzzing the public listener of a real server process with fast-check, shared by
 * `test/unit/http/fuzz.test.ts` (small count) and `scripts/fuzz.ts` (≥ 100,000 requests).
 *
 * Phase 1, well-framed requests (most of the run): random methods, paths, query strings (broken
 * percent-encoding, huge numbers, NaN, unicode, repeats, 10,000 parameters, oversize), odd and
 * duplicated headers, malformed Authorization values, a real key for a share of them so deep paths
 * run. Each answer is checked against an independent oracle, which shares no code with src/request,
 * src/query, src/index or src/text: its own reading of the parameters (test/reference/params.ts, CONTRACT 2,
 * 4, 10) and the brute-force reference search over the same records. Checked: the exact status,
 * the common headers, the error body, the parameters a 400 names in `details` (their sentences
 * are the product's wording: present, not compared), the exact 200 body. Sent 16 at a time over
 * keep-alive connections.
 *
 * Phase 2, malformed framing over raw sockets (control characters, bad methods and versions,
 * bare LF, missing Host, too many headers, odd bodies): uWS decides these before our handler, so
 * the allowed outcomes are a contract answer (never a 5xx), a close, or silence (uWS waiting for
 * the rest of a request it cannot parse, until its idle timeout). Counted separately.
 *
 * Always: the server process stays alive; a well-framed request never waits more than 5 s.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hashSecret } from '../../src/auth/api-key.js';
import { MAX_HEADER_CHARS, MAX_TARGET_CHARS, SEARCH_PATH } from '../../src/http/public-app.js';
import type { Contact, MessageLine } from '../../src/model/records.js';
import { openStores } from '../../src/store/open-store.js';
import { generate, orgData } from '../fixtures/gen-data.js';
import { referenceSearch } from '../reference/brute-force.js';
import { detailsProblem, referenceParams, type ReferenceParams } from '../reference/params.js';
import { header, RawConnection, rawOnce, UWS_SPLIT_HEAD_LIMIT, type RawOutcome, type RawResponse } from './raw-http.js';
import { startServer, tempDataDir, type RunningServer } from './server.js';

export const ORG_A = '0a0a0a0a-0000-4000-8000-00000000000a'; // data, granted to FULL
export const ORG_B = '0b0b0b0b-0000-4000-8000-00000000000b'; // no data, granted to FULL
export const ORG_C = '0c0c0c0c-0000-4000-8000-00000000000c'; // data, granted only to C_KEY

interface KeyDef {
  key: string;
  orgs: string[];
  scopes: string[];
}

function fixedKey(prefix: string, secretChar: string): string {
  return `crm_live_${prefix}_${secretChar.repeat(32)}`;
}
const FULL: KeyDef = {
  key: fixedKey('fuzzfull', 'F'),
  orgs: [ORG_A, ORG_B],
  scopes: ['contacts:read', 'messages:read'],
};
const CONTACTS_ONLY: KeyDef = { key: fixedKey('fuzzcont', 'C'), orgs: [ORG_A], scopes: ['contacts:read'] };
const C_KEY: KeyDef = { key: fixedKey('fuzzorgc', 'G'), orgs: [ORG_C], scopes: ['contacts:read', 'messages:read'] };
const REVOKED: KeyDef = { key: fixedKey('fuzzrevk', 'R'), orgs: [ORG_A], scopes: ['contacts:read', 'messages:read'] };
const KEYS = [FULL, CONTACTS_ONLY, C_KEY];
const ALL_KEYS = [...KEYS, REVOKED];

/** The records of the organizations with data, as the oracle searches them. */
export interface OracleData {
  contacts: Contact[];
  messages: MessageLine[];
}

/** The running target: a real server on a temporary embedded store, and the oracle's records. */
export interface FuzzTarget {
  server: RunningServer;
  port: number;
  records: OracleData;
  close(): Promise<number | null>;
}

export async function startFuzzTarget(): Promise<FuzzTarget> {
  const data = tempDataDir();
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  const records: OracleData = { contacts: [], messages: [] };
  for (const [org, n] of [
    [ORG_A, 1],
    [ORG_C, 3],
  ] as const) {
    const g = generate(n, 120, 2400, n);
    for (const c of g.contacts) c.organization_id = org;
    for (const m of g.messages) m.organization_id = org;
    await store.snapshots.publishSnapshot(orgData(g));
    records.contacts.push(...g.contacts);
    records.messages.push(...g.messages);
  }
  const now = new Date().toISOString();
  for (const k of ALL_KEYS) {
    const [, prefix, secret] = /^crm_live_([a-z0-9]{8})_(.{32})$/.exec(k.key)!;
    await store.keys.putKey({
      prefix,
      name: 'fuzz',
      hash: hashSecret(secret),
      organization_ids: k.orgs,
      scopes: k.scopes,
      created_at: now,
      expires_at: null,
      revoked_at: k === REVOKED ? now : null,
      last_used_at: null,
    });
  }
  await store.close();
  const server = await startServer({ DATA_DIR: data.dir, LOG_LEVEL: 'silent' });
  return {
    server,
    port: Number(new URL(server.url).port),
    records,
    async close() {
      const code = await server.stop();
      data.cleanup();
      return code;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface FramedRequest {
  method: string;
  /** path, and `?query` when present; may hold raw (UTF-8) unicode */
  target: string;
  /** header lines after Host, in order (names as sent) */
  headers: Array<[string, string]>;
}

const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const wellFormed = (s: string) => s.replace(lone, '\uFFFD');
const formEncode = (s: string) => encodeURIComponent(wellFormed(s)).replace(/%20/g, '+');
// Control characters are the point here: they must reach the server percent-encoded.
// biome-ignore lint/suspicious/noControlCharactersInRegex: encodes control characters on purpose
const RAW_ENCODED = /[\u0000-\u0020\u007f%&=#+?\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/g;
/** Leaves unicode raw; escapes only what would break the request line or the query syntax. */
const rawEncode = (s: string) => wellFormed(s).replace(RAW_ENCODED, (c) => encodeURIComponent(c));

const WORDS = [
  'pedido',
  'boleto',
  'olá',
  'preço',
  'segunda via',
  'ação',
  'Ação',
  'ok',
  '🙂',
  'ﬁm',
  'entrega',
  'PEDIDO',
  'o',
  '!!',
  'x'.repeat(250),
  'ß',
  'İ',
  'ς',
];
const NUMBERS = [
  '0',
  '1',
  '3',
  '20',
  '21',
  '50',
  '100',
  '101',
  '-1',
  '1.5',
  '+1',
  ' 1',
  '1e2',
  'NaN',
  'Infinity',
  '-0',
  '007',
  '0x10',
  '9007199254740991',
  '9007199254740992',
  '99999999999999999999999999',
  '1'.repeat(400),
  '٣',
  '１',
];
const DATES = [
  '2024-01-01',
  '2024-01-03',
  '2024-02-29',
  '2023-02-29',
  '2024-02-30',
  '2024-01-01T10:00Z',
  '2024-01-01T10:00:00.123456+03:00',
  '2024-01-01T23:59:60Z',
  '2024-01-01t10:00z',
  '2024-13-01',
  '24-01-01',
  '2024-01-01T10:00:00',
  'yesterday',
  '0000-01-01',
  '9999-12-31',
];
const ORGS = [
  ORG_A,
  ORG_A.toUpperCase(),
  ORG_B,
  ORG_C,
  '00000000-0000-0000-0000-000000000000',
  ORG_A.slice(1),
  ORG_A + '0',
  'not-a-uuid',
  ORG_A.replace(/-/g, ''),
];
const ENUMS = [
  'any',
  'all',
  'ALL',
  'inbound',
  'outbound',
  'email',
  'whatsapp',
  'whatsapp_cloud_api',
  'instagram',
  'telegram',
  'sms',
  '',
];
const NAMES = [
  'organization_id',
  'q',
  'keywords',
  'keyword',
  'match',
  'direction',
  'channel',
  'from',
  'to',
  'limit',
  'offset',
  'messages_limit',
];

const arbText = fc.oneof(
  { arbitrary: fc.constantFrom(...WORDS), weight: 5 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
  {
    arbitrary: fc
      .array(fc.constantFrom(...WORDS, ',', ';', '\n', '\r\n', '，', ' '), { maxLength: 15 })
      .map((a) => a.join('')),
    weight: 3,
  },
);
const arbValue = fc.oneof(
  { arbitrary: arbText, weight: 4 },
  { arbitrary: fc.constantFrom(...NUMBERS), weight: 2 },
  { arbitrary: fc.constantFrom(...DATES), weight: 2 },
  { arbitrary: fc.constantFrom(...ORGS), weight: 2 },
  { arbitrary: fc.constantFrom(...ENUMS), weight: 2 },
  { arbitrary: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String), weight: 1 },
  { arbitrary: fc.double().map(String), weight: 1 },
);
const arbName = fc.oneof(
  { arbitrary: fc.constantFrom(...NAMES), weight: 10 },
  { arbitrary: fc.constantFrom('Limit', 'Q', 'keyword[]', 'organization_id ', 'x', '', 'q%00'), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 8 }), weight: 1 },
);

/** How one name or value is written into the query: form-encoded, raw unicode, or broken. */
const arbEncoded = (arb: fc.Arbitrary<string>) =>
  fc
    .tuple(
      arb,
      fc.constantFrom('form', 'form', 'form', 'raw', 'broken', 'double'),
      fc.nat(),
      fc.constantFrom('%', '%z', '%G1', '%C3', '%E0%A4', '%ED%A0%80', '%FF', '%00', '%0A', '%25', '%2', '+'),
    )
    .map(([s, how, at, bad]) => {
      if (how === 'raw') return rawEncode(s);
      if (how === 'double') return formEncode(formEncode(s));
      const e = formEncode(s);
      if (how === 'broken') {
        const i = e.length === 0 ? 0 : at % (e.length + 1);
        return e.slice(0, i) + bad + e.slice(i);
      }
      return e;
    });

const arbPair = fc
  .tuple(arbEncoded(arbName), fc.option(arbEncoded(arbValue), { nil: undefined, freq: 12 }))
  .map(([n, v]) => (v === undefined ? n : `${n}=${v}`));

/** A plausible base (valid org, a term) so that most mutations reach the parser's deeper rules. */
const arbBase = fc.constantFrom(
  [`organization_id=${ORG_A}`, 'q=pedido'],
  [`organization_id=${ORG_A}`, 'keywords=ol%C3%A1%2Cboleto', 'match=all', 'direction=all'],
  [`organization_id=${ORG_A}`, 'q=pedido', 'limit=100', 'messages_limit=20', 'direction=all'],
  [`organization_id=${ORG_C}`, 'keyword=segunda+via'],
  [`organization_id=${ORG_B}`, 'q=ok'],
  [],
);

/** Well-formed searches with every optional parameter at most once: most of them answer 200. */
const arbCleanQuery = fc
  .record({
    org: fc.constantFrom(ORG_A, ORG_A, ORG_A.toUpperCase(), ORG_C, ORG_B),
    terms: fc.uniqueArray(
      fc.constantFrom(
        'q=pedido',
        'q=boleto+ok',
        'q=%C3%A7%C3%A3o',
        'keywords=ol%C3%A1%2Cpre%C3%A7o%3Bentrega',
        'keywords=o%2Cok%0A%F0%9F%99%82',
        'keyword=segunda+via',
        'keyword=ok',
        'keyword=%EF%AC%81m',
        'keyword=fim',
        'keyword=PEDIDO',
      ),
      { minLength: 1, maxLength: 4, selector: (t) => (t.startsWith('keyword=') ? t : t.slice(0, 2)) },
    ),
    limit: fc.option(fc.integer({ min: 1, max: 100 })),
    offset: fc.option(fc.oneof(fc.integer({ min: 0, max: 150 }), fc.constant(Number.MAX_SAFE_INTEGER))),
    messagesLimit: fc.option(fc.integer({ min: 0, max: 20 })),
    match: fc.option(fc.constantFrom('any', 'all')),
    direction: fc.option(fc.constantFrom('inbound', 'outbound', 'all')),
    channel: fc.option(fc.constantFrom('whatsapp', 'whatsapp_cloud_api', 'instagram', 'telegram', 'email')),
    from: fc.option(fc.constantFrom('2024-01-01', '2024-01-01T12:00Z', '2024-01-02T00:00:00.5%2B03:00')),
    to: fc.option(fc.constantFrom('2024-01-02', '2024-01-03T00:00', '2030-01-01')),
  })
  .map((p) => {
    const parts = [`organization_id=${p.org}`, ...p.terms];
    const opt = (name: string, v: string | number | null) => v !== null && parts.push(`${name}=${v}`);
    opt('limit', p.limit);
    opt('offset', p.offset);
    opt('messages_limit', p.messagesLimit);
    opt('match', p.match);
    opt('direction', p.direction);
    opt('channel', p.channel);
    opt('from', p.from);
    opt('to', p.to);
    return parts.join('&');
  });

const arbQuery: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: arbCleanQuery, weight: 30 },
  {
    arbitrary: fc.tuple(arbBase, fc.array(arbPair, { maxLength: 12 }), fc.boolean()).map(([b, extra, shuffle]) => {
      const all = [...b, ...extra];
      if (shuffle) all.reverse();
      return all.join('&');
    }),
    weight: 40,
  },
  {
    arbitrary: fc
      .array(fc.constantFrom('&', '=', '&&', '==', '%', '+', '?', '#'), { maxLength: 10 })
      .map((a) => a.join('')),
    weight: 2,
  },
  { arbitrary: fc.constant(null), weight: 2 },
  // 10,000 parameters: empty pieces (200), unknown bare names (400: no org), too many to fit (414)
  {
    arbitrary: fc.constantFrom(
      `organization_id=${ORG_A}&q=pedido` + '&'.repeat(10_000),
      'a&'.repeat(10_000),
      `organization_id=${ORG_A}&q=pedido&` + 'x=&'.repeat(10_000),
      'k=1&'.repeat(10_000),
      `organization_id=${ORG_A}&` + 'keyword=ab&'.repeat(2_000),
    ),
    weight: 1,
  },
  // oversize target: 414
  {
    arbitrary: fc
      .integer({ min: MAX_TARGET_CHARS + 1024, max: 60_000 })
      .map((n) => `organization_id=${ORG_A}&q=` + 'a'.repeat(n)),
    weight: 1,
  },
);

const arbPath = fc.oneof(
  { arbitrary: fc.constant(SEARCH_PATH), weight: 30 },
  {
    arbitrary: fc.constantFrom(
      '/',
      '/contacts',
      `${SEARCH_PATH}/`,
      '/contacts/message%2Dsearch',
      `/${SEARCH_PATH}`,
      '/CONTACTS/message-search',
      `${SEARCH_PATH};x`,
      '/contacts/../contacts/message-search',
      '/webhooks',
      '/messages/search',
      '/healthz',
      '/metrics',
      '/admin/reload',
      `${SEARCH_PATH}%00`,
      '/' + 'a'.repeat(2000),
    ),
    weight: 3,
  },
  {
    arbitrary: fc
      .string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/%"), maxLength: 40 })
      .map((s) => '/' + s),
    weight: 2,
  },
);

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'CONNECT'];
const arbMethod = fc.oneof(
  { arbitrary: fc.constant('GET'), weight: 16 },
  { arbitrary: fc.constant('HEAD'), weight: 2 },
  { arbitrary: fc.constantFrom(...METHODS), weight: 2 },
);

const arbAuth: fc.Arbitrary<string | null> = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      `Bearer ${FULL.key}`,
      `bearer ${FULL.key}`,
      `BEARER ${FULL.key}`,
      `Bearer   ${FULL.key}`,
    ),
    weight: 12,
  },
  {
    arbitrary: fc.constantFrom(`Bearer ${CONTACTS_ONLY.key}`, `Bearer ${C_KEY.key}`, `Bearer ${REVOKED.key}`),
    weight: 4,
  },
  { arbitrary: fc.constant(null), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      '',
      'Bearer',
      'Bearer ',
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      FULL.key,
      `Token ${FULL.key}`,
      `Bearer ${FULL.key}x`,
      `Bearer ${FULL.key.slice(0, -1)}`,
      `Bearer ${FULL.key.replace('crm_live_', 'crm_test_')}`,
      `Bearer crm_live_zzzzzzzz_${'F'.repeat(32)}`,
      `Bearer ${FULL.key.slice(0, -1)}G`,
      `Bearer ${FULL.key.toUpperCase()}`,
      `Bearer ${FULL.key} extra`,
      `Bearer\t${FULL.key}`,
      `Bearer ${FULL.key},Bearer ${FULL.key}`,
      `Bearer crm_live_${'a'.repeat(8)}_${'é'.repeat(32)}`,
      'Bearer ' + 'A'.repeat(8000),
      'Bearer crm_live__',
      'Bearer crm_live_fuzzfull_',
      'Négative',
    ),
    weight: 6,
  },
  {
    arbitrary: fc.string({
      unit: fc.constantFrom(
        ...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~',
      ),
      maxLength: 80,
    }),
    weight: 2,
  },
);

/** RFC 9110 token characters. */
const TOKEN = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+.^_`|~-"];
/**
 * The header-name characters this uWS build accepts: any other token character (`_`, `.`, `!`...)
 * makes it wait, silently, until its idle timeout. Those are exercised in phase 2.
 */
const UWS_NAME = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-'];
const PRINTABLE = [
  ...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~',
];
const FRAMING = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'expect',
  'upgrade',
  'authorization',
  'x-request-id',
  'te',
  'trailer',
]);
const trimmed = (s: string) => s.trim();
const arbOddHeader = fc
  .oneof(
    {
      arbitrary: fc.tuple(
        fc.string({ unit: fc.constantFrom(...UWS_NAME), minLength: 1, maxLength: 20 }),
        fc.string({ unit: fc.constantFrom(...PRINTABLE), maxLength: 60 }).map(trimmed),
      ),
      weight: 4,
    },
    {
      arbitrary: fc.constantFrom<[string, string]>(
        ['Accept', 'application/json'],
        ['Accept', '*/*'],
        ['Cookie', 'a=b; c=d'],
        ['X-Forwarded-For', '1.2.3.4, 5.6.7.8'],
        ['Accept-Encoding', 'gzip, br'],
        ['If-None-Match', '*'],
        ['Range', 'bytes=0-1'],
        ['Origin', 'null'],
        ['Cache-Control', 'no-cache'],
        ['X-Empty', ''],
      ),
      weight: 3,
    },
  )
  .filter(([k]) => !FRAMING.has(k.toLowerCase()));

const arbRequestId = fc.oneof(
  fc.constantFrom('fuzz-1', 'a', 'x'.repeat(128), 'x'.repeat(129), 'has space', 'semi;colon', 'ü', '..', '-_.'),
  fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 140 }),
);

const arbHeaders: fc.Arbitrary<Array<[string, string]>> = fc
  .tuple(
    fc.oneof(
      { arbitrary: arbAuth.map((a) => [a]), weight: 17 },
      { arbitrary: fc.array(arbAuth, { maxLength: 2 }), weight: 3 },
    ),
    fc.array(arbRequestId, { maxLength: 2 }),
    fc.array(arbOddHeader, { maxLength: 30 }),
    fc.constantFrom('authorization', 'Authorization', 'AUTHORIZATION', 'aUtHoRiZaTiOn'),
    fc.oneof(
      { arbitrary: fc.constant(0), weight: 30 },
      { arbitrary: fc.integer({ min: MAX_HEADER_CHARS + 1024, max: 60_000 }), weight: 1 },
    ),
    fc.nat(),
  )
  .map(([auths, ids, odd, authName, big, seed]) => {
    const out: Array<[string, string]> = [...odd];
    const insert = (h: [string, string], i: number) =>
      out.splice(out.length === 0 ? 0 : (seed + i * 7) % (out.length + 1), 0, h);
    auths.forEach((a, i) => {
      if (a !== null) insert([authName, a], i);
    });
    ids.forEach((id, i) => {
      insert(['X-Request-Id', id], i + 3);
    });
    if (big > 0) out.push(['X-Big', 'b'.repeat(big)]);
    return out;
  });

export const arbFramed: fc.Arbitrary<FramedRequest> = fc
  .record({ method: arbMethod, path: arbPath, query: arbQuery, headers: arbHeaders })
  .map(({ method, path, query, headers }) => ({ method, target: query === null ? path : `${path}?${query}`, headers }));

export function framedBytes(r: FramedRequest): Buffer {
  let s = `${r.method} ${r.target} HTTP/1.1\r\nHost: fuzz\r\n`;
  for (const [k, v] of r.headers) s += `${k}: ${v}\r\n`;
  return Buffer.from(s + '\r\n', 'utf8');
}

// ---------------------------------------------------------------------------------------------
// Oracle

const ALLOWED = new Set([200, 400, 401, 403, 404, 405, 414, 431]);
const CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  414: 'uri_too_long',
  429: 'too_many_requests',
  431: 'headers_too_large',
};
const ID_RE = /^[A-Za-z0-9._-]{1,128}$/;

export interface Expectation {
  status: number;
  /** exact body for 200 */
  body?: string;
  /** for 400: what the reference reading says must be named in `details` */
  params?: Extract<ReferenceParams, { ok: false }>;
  requestId?: string;
}

/** What the contract says this well-framed request must get, computed without the server. */
export function expect(r: FramedRequest, records: OracleData): Expectation {
  const q = r.target.indexOf('?');
  const path = q < 0 ? r.target : r.target.slice(0, q);
  const query = q < 0 ? '' : r.target.slice(q + 1);
  // several X-Request-Id lines: their id when they agree, else none (a new one)
  const ids = r.headers.filter(([k]) => k.toLowerCase() === 'x-request-id').map(([, v]) => v);
  const id = ids.length > 0 && ids.every((v) => v === ids[0]) ? ids[0] : undefined;
  const requestId = id !== undefined && ID_RE.test(id) ? id : undefined;
  const targetChars = path.length + (query.length > 0 ? query.length + 1 : 0);
  let headerChars = 'host'.length + 'fuzz'.length + 4;
  for (const [k, v] of r.headers) headerChars += k.length + v.length + 4;
  const e = (status: number, more: Partial<Expectation> = {}): Expectation => ({ status, requestId, ...more });
  if (targetChars > MAX_TARGET_CHARS) return e(414);
  if (headerChars > MAX_HEADER_CHARS) return e(431);
  if (path !== SEARCH_PATH) return e(404);
  if (r.method !== 'GET' && r.method !== 'HEAD') return e(405);
  // several Authorization lines must all carry one key, else no key is taken
  const tokens = r.headers
    .filter(([k]) => k.toLowerCase() === 'authorization')
    .map(([, v]) => /^[Bb][Ee][Aa][Rr][Ee][Rr] +(\S+) *$/.exec(v)?.[1]);
  const token = tokens.length > 0 && tokens.every((t) => t === tokens[0]) ? tokens[0] : undefined;
  const key = token !== undefined ? KEYS.find((k) => k.key === token) : undefined;
  if (!key) return e(401);
  if (!key.scopes.includes('contacts:read') || !key.scopes.includes('messages:read')) return e(403);
  const parsed = referenceParams(query);
  if (!parsed.ok) return e(400, { params: parsed });
  if (!key.orgs.includes(parsed.request.organizationId)) return e(403);
  return e(200, { body: JSON.stringify(referenceSearch(records.contacts, records.messages, parsed.request)) });
}

/** The checks every answer must pass (any request): allowed status, headers, JSON body. */
export function checkCommon(res: RawResponse, head: boolean): void {
  assert.ok(ALLOWED.has(res.status), `status ${res.status} is not a contract status`);
  assert.equal(header(res, 'content-type'), 'application/json; charset=utf-8');
  assert.equal(header(res, 'cache-control'), 'no-store');
  const id = header(res, 'x-request-id');
  assert.ok(id !== undefined && ID_RE.test(id), `X-Request-Id ${id}`);
  if (res.status === 401) assert.equal(header(res, 'www-authenticate'), 'Bearer');
  if (res.status === 405) assert.equal(header(res, 'allow'), 'GET, HEAD');
  if (head) {
    assert.equal(res.body.length, 0);
    assert.ok(/^\d+$/.test(header(res, 'content-length') ?? ''), 'HEAD carries Content-Length');
    return;
  }
  const body = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
  if (res.status === 200) {
    assert.deepEqual(Object.keys(body), ['data', 'pagination', 'query']);
  } else {
    assert.equal(body.error, CODES[res.status]);
    assert.equal(typeof body.message, 'string');
    assert.equal(body.request_id, id);
    assert.deepEqual(
      Object.keys(body),
      res.status === 400 ? ['error', 'message', 'request_id', 'details'] : ['error', 'message', 'request_id'],
    );
  }
}

export function checkExpected(r: FramedRequest, res: RawResponse, want: Expectation): void {
  const head = r.method === 'HEAD';
  assert.equal(res.status, want.status, `status (body ${res.body.toString('utf8').slice(0, 300)})`);
  checkCommon(res, head);
  if (want.requestId !== undefined) assert.equal(header(res, 'x-request-id'), want.requestId);
  if (head) return;
  const text = res.body.toString('utf8');
  if (want.status === 200) assert.equal(text, want.body, '200 body equals the brute-force reference');
  if (want.status === 400) {
    const problem = detailsProblem(
      (JSON.parse(text) as { details: { parameter: string; message: string }[] }).details,
      want.params!,
    );
    assert.equal(problem, null, `400 details: ${problem}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed framing (phase 2)

export interface RawCase {
  what: string;
  bytes: Buffer;
  head: boolean;
}

const CTL = [...Array(32).keys(), 127].map((c) => String.fromCharCode(c));
export const arbRaw: fc.Arbitrary<RawCase> = fc
  .tuple(
    arbFramed.filter((r) => r.target.length < 2000 && r.headers.every(([, v]) => v.length < 2000)),
    fc.constantFrom(
      'ctl-in-target',
      'ctl-in-header',
      'high-byte',
      'method',
      'version',
      'bare-lf',
      'no-host',
      'many-headers',
      'no-colon',
      'space-in-name',
      'token-name',
      'obs-fold',
      'body-cl',
      'chunked',
      'cl-te',
      'bad-cl',
      'truncated',
      'garbage',
      'pipelined',
      'expect',
      'abs-form',
      'padded-auth',
      'nul',
    ),
    fc.nat(),
    fc.constantFrom(...CTL),
    fc.string({ unit: fc.constantFrom(...TOKEN, ...'@ []{}<>"/\\'), minLength: 1, maxLength: 10 }),
    fc.uint8Array({ minLength: 1, maxLength: 64 }),
  )
  .map(([base, what, at, ctl, token, junk]) => {
    const lines = framedBytes(base).toString('utf8').split('\r\n');
    const reqLine = lines[0];
    const hdrs = lines.slice(1, -2);
    const build = (rl: string, hs: string[], body = '', eol = '\r\n') =>
      Buffer.from(rl + eol + hs.map((h) => h + eol).join('') + eol + body, 'utf8');
    const sp = reqLine.indexOf(' ');
    const lastSp = reqLine.lastIndexOf(' ');
    let bytes: Buffer;
    let method = base.method;
    switch (what) {
      case 'ctl-in-target': {
        const t = reqLine.slice(sp + 1, lastSp);
        const i = at % (t.length + 1);
        bytes = build(`${base.method} ${t.slice(0, i)}${ctl}${t.slice(i)} HTTP/1.1`, hdrs);
        break;
      }
      case 'ctl-in-header': {
        const i = at % hdrs.length;
        const h = hdrs[i];
        const j = at % (h.length + 1);
        bytes = build(reqLine, [...hdrs.slice(0, i), h.slice(0, j) + ctl + h.slice(j), ...hdrs.slice(i + 1)]);
        break;
      }
      case 'high-byte': {
        const b = build(reqLine, hdrs);
        const i = at % (b.length - 4);
        bytes = Buffer.concat([b.subarray(0, i), Buffer.from([0x80 + (at % 128)]), b.subarray(i)]);
        break;
      }
      case 'method':
        method = [token, token.toLowerCase(), 'G@T', 'PROPFIND', '', 'GET GET'][at % 6];
        bytes = build(`${method} ${reqLine.slice(sp + 1)}`, hdrs);
        break;
      case 'version':
        bytes = build(
          `${reqLine.slice(0, lastSp)} ${['HTTP/1.0', 'HTTP/2.0', 'http/1.1', 'HTTP/1.1x', 'HTTP/1', '', 'HTTP/1.1 '][at % 7]}`,
          hdrs,
        );
        break;
      case 'bare-lf':
        bytes = build(reqLine, hdrs, '', '\n');
        break;
      case 'no-host':
        bytes = build(
          reqLine,
          hdrs.filter((h) => !h.startsWith('Host:')),
        );
        break;
      case 'many-headers':
        bytes = build(reqLine, [...hdrs, ...Array.from({ length: 40 + (at % 80) }, (_, i) => `X-H${i}: ${i}`)]);
        break;
      case 'no-colon':
        bytes = build(reqLine, [...hdrs, token]);
        break;
      case 'space-in-name':
        bytes = build(reqLine, [...hdrs, `X ${token}: v`]);
        break;
      case 'token-name':
        bytes = build(reqLine, [...hdrs, `X${token}: v`]);
        break;
      case 'obs-fold':
        bytes = build(reqLine, [...hdrs, 'X-Fold: a', ' b']);
        break;
      case 'body-cl':
        bytes = build(reqLine, [...hdrs, `Content-Length: ${junk.length}`], Buffer.from(junk).toString('latin1'));
        break;
      case 'chunked':
        bytes = build(
          reqLine,
          [...hdrs, 'Transfer-Encoding: chunked'],
          at % 2 ? '5\r\nhello\r\n0\r\n\r\n' : 'zz\r\nhello\r\n',
        );
        break;
      case 'cl-te':
        bytes = build(reqLine, [...hdrs, 'Content-Length: 3', 'Transfer-Encoding: chunked'], '0\r\n\r\n');
        break;
      case 'bad-cl':
        bytes = build(reqLine, [
          ...hdrs,
          `Content-Length: ${['-1', 'abc', '99999999999999999999', '1, 2', ''][at % 5]}`,
        ]);
        break;
      case 'truncated': {
        const b = build(reqLine, hdrs);
        bytes = b.subarray(0, at % b.length);
        break;
      }
      case 'garbage':
        bytes = Buffer.from(junk);
        break;
      case 'pipelined':
        bytes = Buffer.concat([build(reqLine, hdrs), build(reqLine, hdrs)]);
        break;
      case 'expect':
        bytes = build(reqLine, [...hdrs, 'Expect: 100-continue', 'Content-Length: 2'], 'ab');
        break;
      case 'abs-form':
        bytes = build(`${base.method} ${['http://fuzz', '*', 'fuzz:80', ''][at % 4]}${reqLine.slice(sp + 1)}`, hdrs);
        break;
      case 'padded-auth':
        bytes = build(reqLine, [
          ...hdrs.filter((h) => !/^authorization:/i.test(h)),
          `Authorization: ${['  ', '\t', ' '][at % 3]}Bearer ${FULL.key}${['  ', '\t', ''][at % 3]}`,
        ]);
        break;
      default: // nul
        bytes = build(reqLine.replace(' HTTP', '\u0000 HTTP'), hdrs);
    }
    return { what, bytes, head: method === 'HEAD' };
  });

// ---------------------------------------------------------------------------------------------
// Runner

export interface FuzzStats {
  requests: number;
  framed: number;
  raw: number;
  statuses: Record<string, number>;
  /** phase 2 outcomes without a response */
  rawClosed: number;
  rawSilent: number;
  /** by mutation: answered / closed / silent */
  rawByKind: Record<string, [number, number, number]>;
  /** phase 1: heads over UWS_SPLIT_HEAD_LIMIT bytes that uWS closed unanswered (split over reads) */
  framedClosedLarge: number;
  seconds: number;
}

export interface FuzzOptions {
  requests: number;
  seed: number;
  /** share of phase 2 (malformed framing), default 0.1 */
  rawShare?: number;
  log?: (line: string) => void;
}

const BATCH = 16;
const RAW_BATCH = 128;
const FRAMED_TIMEOUT_MS = 5000;
/** A malformed request uWS is still waiting on after this long is "silent" (it would close it at its idle timeout). */
const SILENT_MS = 600;

/** A counterexample for a report: long strings cut so one failure stays readable. */
function compact(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === 'string' && x.length > 300) return `${x.slice(0, 150)}…(${x.length} chars)…${x.slice(-60)}`;
    if (x instanceof Uint8Array || (x && typeof x === 'object' && (x as { type?: string }).type === 'Buffer')) {
      const b = Buffer.from(x as Uint8Array);
      return `<bytes ${b.length}: ${JSON.stringify(b.subarray(0, 400).toString('latin1'))}>`;
    }
    return x;
  });
}

/** Runs a property with fc.check and throws one compact error (seed, path, shrunk input, cause). */
async function check<T>(
  name: string,
  prop: fc.IAsyncPropertyWithHooks<T>,
  seed: number,
  numRuns: number,
): Promise<void> {
  const d = await fc.check(prop, { seed, numRuns, endOnFailure: false });
  if (!d.failed) return;
  const cause = d.errorInstance instanceof Error ? d.errorInstance.message : String(d.errorInstance);
  throw new Error(
    `${name} failed after ${d.numRuns} runs (${d.numShrinks} shrinks); replay: seed ${d.seed}, path "${(d.counterexamplePath ?? '').slice(0, 80)}"\n` +
      `cause: ${cause.slice(0, 3000)}\ncounterexample: ${compact(d.counterexample).slice(0, 6000)}`,
  );
}

export async function runFuzz(target: FuzzTarget, opts: FuzzOptions): Promise<FuzzStats> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const rawCount = Math.round(opts.requests * (opts.rawShare ?? 0.1));
  const framedCount = opts.requests - rawCount;
  const stats: FuzzStats = {
    requests: 0,
    framed: 0,
    raw: 0,
    statuses: {},
    rawClosed: 0,
    rawSilent: 0,
    rawByKind: {},
    framedClosedLarge: 0,
    seconds: 0,
  };
  const count = (k: string) => (stats.statuses[k] = (stats.statuses[k] ?? 0) + 1);
  const alive = () =>
    assert.equal(
      target.server.child.exitCode,
      null,
      `the server process exited:\n${target.server.output().slice(-2000)}`,
    );

  const pool: RawConnection[] = Array.from({ length: BATCH }, () => new RawConnection(target.port));
  const conn = (i: number) => {
    if (pool[i].closed) pool[i] = new RawConnection(target.port);
    return pool[i];
  };

  const framedRuns = Math.ceil(framedCount / BATCH);
  let nextReport = Date.now() + 5000;
  try {
    await check(
      'well-framed phase',
      fc.asyncProperty(fc.array(arbFramed, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const results = await Promise.allSettled(
          batch.map(async (r, i) => {
            const want = expect(r, target.records);
            const c = conn(i);
            try {
              const bytes = framedBytes(r);
              const out: RawOutcome = await c.request(bytes, {
                head: r.method === 'HEAD',
                timeoutMs: FRAMED_TIMEOUT_MS,
              });
              stats.requests++;
              stats.framed++;
              if (out.kind === 'closed' && out.partial.length === 0 && bytes.length > UWS_SPLIT_HEAD_LIMIT) {
                // uWS's own limit (src/http/uws.ts): a head over 4 KiB that reached it in two reads.
                stats.framedClosedLarge++;
                alive();
                return;
              }
              if (out.kind !== 'response') {
                alive();
                assert.fail(`no answer (${out.kind}) to a well-framed request within ${FRAMED_TIMEOUT_MS} ms`);
              }
              count(String(out.status));
              checkExpected(r, out, want);
              assert.equal(c.unsolicited, 0, 'no bytes beyond the response');
            } catch (err) {
              c.destroy();
              throw err;
            }
          }),
        );
        const failed = results.find((x) => x.status === 'rejected');
        if (failed) throw (failed as PromiseRejectedResult).reason;
        alive();
        if (Date.now() > nextReport) {
          nextReport = Date.now() + 5000;
          log(`fuzz: ${stats.requests} requests, ${((Date.now() - started) / 1000).toFixed(0)} s`);
        }
      }),
      opts.seed,
      framedRuns,
    );
  } finally {
    for (const c of pool) c.destroy();
  }

  const rawRuns = Math.ceil(rawCount / RAW_BATCH);
  if (rawRuns > 0) {
    await check(
      'malformed-framing phase',
      fc.asyncProperty(fc.array(arbRaw, { minLength: RAW_BATCH, maxLength: RAW_BATCH }), async (batch) => {
        await Promise.all(
          batch.map(async (r) => {
            const out = await rawOnce(target.port, r.bytes, { head: r.head, timeoutMs: SILENT_MS });
            stats.requests++;
            stats.raw++;
            const k = (stats.rawByKind[r.what] ??= [0, 0, 0]);
            if (out.kind === 'response') {
              k[0]++;
              count(String(out.status));
              checkCommon(out, r.head);
            } else if (out.kind === 'closed') {
              k[1]++;
              stats.rawClosed++;
              // a close may come after a whole response only; a partial answer would be a bug
              assert.equal(out.partial.length, 0, `truncated answer: ${out.partial.toString('latin1').slice(0, 200)}`);
            } else {
              k[2]++;
              stats.rawSilent++;
              assert.equal(
                out.partial.length,
                0,
                `partial answer then silence: ${out.partial.toString('latin1').slice(0, 200)}`,
              );
            }
          }),
        );
        alive();
      }),
      opts.seed + 1,
      rawRuns,
    );
  }
  // Still serving after all of it.
  const probe = await rawOnce(
    target.port,
    framedBytes({
      method: 'GET',
      target: `${SEARCH_PATH}?organization_id=${ORG_A}&q=pedido`,
      headers: [['Authorization', `Bearer ${FULL.key}`]],
    }),
  );
  assert.equal(probe.kind === 'response' && probe.status, 200, 'the server answers after the fuzzing');
  alive();
  stats.seconds = (Date.now() - started) / 1000;
  return stats;
}
