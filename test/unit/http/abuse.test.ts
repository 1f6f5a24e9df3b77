/**
 * Abuse and authorization:
 * - the matrix: keys of several organizations and scope sets against every organization, with
 *   valid and invalid parameters, over real HTTP to the real handler: every cross-organization
 *   request 403, every missing scope 403, in the CONTRACT 5 order, and no index is read for any
 *   refused request (a spy on the index source);
 * - per-key rate limiting: token bucket from RATE_LIMIT_RPS / RATE_LIMIT_BURST, 429 with the
 *   contract body and Retry-After, configuration validated, the limiter's memory bounded;
 * - unknown prefix and wrong secret take the same code path (one SHA-256, one 32-byte constant-time
 *   comparison), checked with a spy on the comparison, not with a clock.
 */
import assert from 'node:assert/strict';
import { timingSafeEqual } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { generateKey, hashSecret } from '../../../src/auth/api-key.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import { RateLimiter } from '../../../src/auth/rate-limit.js';
import { loadConfig } from '../../../src/config/config.js';
import { createPublicApp, SEARCH_PATH } from '../../../src/http/public-app.js';
import { loadUws } from '../../../src/http/uws.js';
import { Metrics } from '../../../src/metrics/metrics.js';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import type { ServingKeyStore } from '../../../src/auth/key-store.js';
import { header, RawConnection, rawGet, type RawResponse } from '../../helpers/raw-http.js';

const ORGS = [
  'a0000000-0000-4000-8000-00000000000a',
  'b0000000-0000-4000-8000-00000000000b',
  'c0000000-0000-4000-8000-00000000000c',
];
const [X, Y, Z] = ORGS;
const BOTH = ['contacts:read', 'messages:read'];
const silent = pino({ level: 'silent' });

interface TestKey {
  name: string;
  key: string;
  record: KeyRecord;
}

function makeKey(name: string, orgs: string[], scopes: string[], extra: Partial<KeyRecord> = {}): TestKey {
  const k = generateKey();
  return {
    name,
    key: k.key,
    record: {
      prefix: k.prefix,
      name,
      hash: k.hash,
      organization_ids: orgs,
      scopes,
      created_at: '2025-01-01T00:00:00.000Z',
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
      ...extra,
    },
  };
}

function fakeStore(records: KeyRecord[], getKeyFails = false): ServingKeyStore {
  return {
    listKeys: async () => records,
    // an unknown prefix is looked up: absent, or a store that cannot answer
    getKey: async (prefix: string) => {
      if (getKeyFails) throw new Error('store: redis unavailable at redis://127.0.0.1:6379: Command timed out');
      return records.find((r) => r.prefix === prefix) ?? null;
    },
    touchKeys: async () => {},
  } as unknown as ServingKeyStore;
}

/** The real public handler on an ephemeral port, with a spy on index reads. */
async function inProcess(
  records: KeyRecord[],
  opts: { rateLimiter?: RateLimiter; compare?: (a: Buffer, b: Buffer) => boolean; getKeyFails?: boolean } = {},
) {
  const uws = loadUws();
  const keys = new KeyCache(fakeStore(records, opts.getKeyFails), { logger: silent, compare: opts.compare });
  await keys.refresh();
  const reads: string[] = [];
  const app = createPublicApp({
    uws,
    keys,
    metrics: new Metrics(() => []),
    logger: silent,
    sunsetAt: null,
    rateLimiter: opts.rateLimiter ?? null,
    indexes: { isReady: () => true, get: (org) => (reads.push(org), null) },
  });
  const { port, socket } = await new Promise<{ port: number; socket: unknown }>((resolve) =>
    app.listen('127.0.0.1', 0, (s) => resolve({ port: uws.us_socket_local_port(s as never), socket: s })),
  );
  const conn = new RawConnection(port);
  return {
    reads,
    keys,
    async get(target: string, auth: string | null): Promise<RawResponse> {
      const out = await conn.request(rawGet(target, auth === null ? [] : [['Authorization', auth]]));
      assert.equal(out.kind, 'response');
      return out as RawResponse;
    },
    close() {
      conn.destroy();
      uws.us_listen_socket_close(socket as never);
    },
  };
}

function body(r: RawResponse): Record<string, unknown> {
  return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
}

describe('authorization matrix (CONTRACT 5 order; no data read before a refusal)', () => {
  const keys = [
    makeKey('X full', [X], BOTH),
    makeKey('X+Y full', [X, Y], BOTH),
    makeKey('Y full', [Y], BOTH),
    makeKey('X contacts only', [X], ['contacts:read']),
    makeKey('X messages only', [X], ['messages:read']),
    makeKey('X no scope', [X], []),
    makeKey('X+Z unknown scope', [X, Z], ['contacts:write', 'messages:read']),
  ];
  const revoked = makeKey('X revoked', [X], BOTH, { revoked_at: '2025-01-02T00:00:00.000Z' });
  const expired = makeKey('X expired', [X], BOTH, { expires_at: '2025-01-02T00:00:00.000Z' });
  let h: Awaited<ReturnType<typeof inProcess>>;
  before(async () => {
    h = await inProcess([...keys, revoked, expired].map((k) => k.record));
  });
  after(() => h.close());

  const variants: Array<[string, (org: string) => string, boolean]> = [
    ['valid parameters', (org) => `organization_id=${org}&q=pedido`, true],
    [
      'upper-case organization id',
      (org) => `organization_id=${org.toUpperCase()}&keyword=segunda+via&direction=all`,
      true,
    ],
    ['invalid parameters', (org) => `organization_id=${org}&q=pedido&limit=0&from=2025-02-30`, false],
    ['no term', (org) => `organization_id=${org}`, false],
  ];

  it(`${keys.length} keys x ${ORGS.length} organizations x ${variants.length} parameter sets, and bad keys`, async () => {
    let checked = 0;
    for (const k of keys) {
      const hasScopes = BOTH.every((s) => k.record.scopes.includes(s));
      for (const org of ORGS) {
        for (const [label, query, valid] of variants) {
          const before = h.reads.length;
          const r = await h.get(`${SEARCH_PATH}?${query(org)}`, `Bearer ${k.key}`);
          const what = `${k.name} -> ${org} (${label})`;
          const granted = k.record.organization_ids.includes(org);
          const want = !hasScopes ? 403 : !valid ? 400 : !granted ? 403 : 200;
          assert.equal(r.status, want, `${what}: ${r.body}`);
          if (want === 403) {
            assert.equal(body(r).error, 'forbidden');
            assert.match(body(r).message as string, hasScopes ? /organization/ : /scope/, what);
          }
          assert.equal(h.reads.length - before, want === 200 ? 1 : 0, `${what}: index reads`);
          if (want === 200) assert.equal(h.reads.at(-1), org);
          checked++;
        }
      }
    }
    // 401 before everything else, for every kind of bad key, every organization, every parameter set
    const bad = [
      null,
      '',
      `Bearer ${revoked.key}`,
      `Bearer ${expired.key}`,
      `Bearer ${keys[0].key.slice(0, -1)}${keys[0].key.endsWith('x') ? 'y' : 'x'}`,
      `Bearer crm_live_zzzzzzzz_${'a'.repeat(32)}`,
      `Basic ${keys[0].key}`,
    ];
    for (const auth of bad) {
      for (const org of ORGS) {
        for (const [, query] of variants) {
          const before = h.reads.length;
          const r = await h.get(`${SEARCH_PATH}?${query(org)}`, auth);
          assert.equal(r.status, 401, `${auth} -> ${org}: ${r.body}`);
          assert.equal(header(r, 'www-authenticate'), 'Bearer');
          assert.equal(h.reads.length, before);
          checked++;
        }
      }
    }
    assert.equal(checked, keys.length * ORGS.length * variants.length + bad.length * ORGS.length * variants.length);
  });
});

describe('a key the store cannot check', () => {
  it('an unknown prefix whose lookup fails: 503 with Retry-After (it was 401, which says the key is bad)', async () => {
    const known = makeKey('known', [X], BOTH);
    const app = await inProcess([known.record], { getKeyFails: true });
    try {
      const fresh = generateKey();
      const r = await app.get(`${SEARCH_PATH}?organization_id=${X}&q=pedido`, `Bearer ${fresh.key}`);
      assert.equal(r.status, 503);
      assert.equal(header(r, 'retry-after'), '1');
      assert.deepEqual(
        { ...body(r), request_id: null },
        {
          error: 'unavailable',
          message:
            'The API key cannot be checked now: the key store is unavailable. Retry after the time in Retry-After.',
          request_id: null,
        },
      );
      // a known key is still checked from memory; a malformed one is still 401
      assert.equal((await app.get(`${SEARCH_PATH}?organization_id=${X}&q=pedido`, `Bearer ${known.key}`)).status, 200);
      assert.equal((await app.get(`${SEARCH_PATH}?organization_id=${X}&q=pedido`, 'Bearer nope')).status, 401);
      assert.deepEqual(app.reads, [X]);
    } finally {
      app.close();
    }
  });
});

describe('rate limiting', () => {
  it('token bucket: burst, then 429 until a token is back; Retry-After in whole seconds', () => {
    let now = 1_000_000;
    const rl = new RateLimiter({ rps: 1, burst: 3, now: () => now });
    for (let i = 0; i < 3; i++) assert.deepEqual(rl.take('k'), { ok: true });
    assert.deepEqual(rl.take('k'), { ok: false, retryAfterSeconds: 1 });
    now += 500;
    assert.deepEqual(rl.take('k'), { ok: false, retryAfterSeconds: 1 });
    now += 500;
    assert.deepEqual(rl.take('k'), { ok: true });
    assert.deepEqual(rl.take('other'), { ok: true }, 'buckets are per key');
    const slow = new RateLimiter({ rps: 0.1, burst: 1, now: () => now });
    slow.take('k');
    assert.deepEqual(slow.take('k'), { ok: false, retryAfterSeconds: 10 });
  });

  it('memory bounded: 100,000 distinct keys never hold more than maxBuckets; idle buckets are swept', () => {
    let now = 0;
    const rl = new RateLimiter({ rps: 10, burst: 5, maxBuckets: 1000, sweepMs: 1000, now: () => now });
    let max = 0;
    for (let i = 0; i < 100_000; i++) {
      rl.take(`key-${i}`);
      max = Math.max(max, rl.size);
      if (i % 1000 === 0) now += 1; // 100 s in all, with heavy traffic
    }
    assert.ok(max <= 1000, `max buckets ${max}`);
    now += 10_000; // everyone idle long enough to refill
    rl.take('late');
    assert.equal(rl.size, 1, 'full buckets dropped by the sweep');
    // a sweep is lossless: a key that used its burst is still limited after one
    for (let i = 0; i < 5; i++) rl.take('busy');
    rl.sweep();
    assert.equal(rl.take('busy').ok, false);
  });

  it('over HTTP: 429 with the contract body and Retry-After, per key, after authentication', async () => {
    const a = makeKey('a', [X], BOTH);
    const b = makeKey('b', [X], BOTH);
    let now = 5_000_000;
    const h = await inProcess([a.record, b.record], {
      rateLimiter: new RateLimiter({ rps: 1, burst: 2, now: () => now }),
    });
    try {
      const q = `${SEARCH_PATH}?organization_id=${X}&q=pedido`;
      assert.equal((await h.get(q, `Bearer ${a.key}`)).status, 200);
      assert.equal((await h.get(q, `Bearer ${a.key}`)).status, 200);
      const reads = h.reads.length;
      const r = await h.get(q, `Bearer ${a.key}`);
      assert.equal(r.status, 429);
      assert.equal(header(r, 'retry-after'), '1');
      assert.equal(header(r, 'content-type'), 'application/json; charset=utf-8');
      assert.equal(header(r, 'cache-control'), 'no-store');
      const b429 = body(r);
      assert.deepEqual(Object.keys(b429), ['error', 'message', 'request_id']);
      assert.equal(b429.error, 'too_many_requests');
      assert.equal(b429.request_id, header(r, 'x-request-id'));
      assert.equal(h.reads.length, reads, 'no data read');
      assert.equal((await h.get(q, `Bearer ${b.key}`)).status, 200, 'another key is not affected');
      assert.equal((await h.get(q, 'Bearer nope')).status, 401, 'bad keys are 401, not counted');
      now += 1000;
      assert.equal((await h.get(q, `Bearer ${a.key}`)).status, 200);
    } finally {
      h.close();
    }
  });

  it('configuration: off by default, validated with messages naming the variable', () => {
    assert.equal(loadConfig({}).rateLimit, null);
    assert.equal(loadConfig({}).slowClientBufferBytes, 256 * 2 ** 20);
    assert.equal(loadConfig({ SLOW_CLIENT_BUFFER_MB: '007' }).slowClientBufferBytes, 7 * 2 ** 20);
    assert.equal(loadConfig({ RATE_LIMIT_RPS: '0' }).rateLimit, null);
    assert.deepEqual(loadConfig({ RATE_LIMIT_RPS: '2.5' }).rateLimit, { rps: 2.5, burst: 3 });
    assert.deepEqual(loadConfig({ RATE_LIMIT_RPS: '50', RATE_LIMIT_BURST: '200' }).rateLimit, { rps: 50, burst: 200 });
    for (const [env, name] of [
      [{ RATE_LIMIT_RPS: 'fast' }, 'RATE_LIMIT_RPS'],
      [{ RATE_LIMIT_RPS: '-1' }, 'RATE_LIMIT_RPS'],
      [{ RATE_LIMIT_RPS: '1e3' }, 'RATE_LIMIT_RPS'],
      [{ RATE_LIMIT_RPS: '10', RATE_LIMIT_BURST: '0' }, 'RATE_LIMIT_BURST'],
      [{ RATE_LIMIT_RPS: '10', RATE_LIMIT_BURST: '1.5' }, 'RATE_LIMIT_BURST'],
      [{ RATE_LIMIT_BURST: '10' }, 'RATE_LIMIT_BURST'],
      [{ SHUTDOWN_TIMEOUT_MS: 'soon' }, 'SHUTDOWN_TIMEOUT_MS'],
      [{ SLOW_CLIENT_BUFFER_MB: '0' }, 'SLOW_CLIENT_BUFFER_MB'],
      [{ SLOW_CLIENT_BUFFER_MB: '1.5' }, 'SLOW_CLIENT_BUFFER_MB'],
      [{ SLOW_CLIENT_BUFFER_MB: 'lots' }, 'SLOW_CLIENT_BUFFER_MB'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (err: Error) => err.message.includes(`config: ${name}`),
        JSON.stringify(env),
      );
    }
  });
});

describe('timing: unknown prefix and wrong secret take the same path', () => {
  it('one 32-byte constant-time comparison of a SHA-256 digest in every case where the key is well-formed', async () => {
    const good = makeKey('good', [X], BOTH);
    const revoked = makeKey('revoked', [X], BOTH, { revoked_at: '2025-01-02T00:00:00.000Z' });
    const expired = makeKey('expired', [X], BOTH, { expires_at: '2025-01-02T00:00:00.000Z' });
    const calls: Array<[number, number]> = [];
    const spy = (a: Buffer, b: Buffer) => {
      calls.push([a.length, b.length]);
      return timingSafeEqual(a, b);
    };
    const cache = new KeyCache(fakeStore([good.record, revoked.record, expired.record]), {
      logger: silent,
      compare: spy,
    });
    await cache.refresh();
    const secret = good.key.slice(-32);
    const cases: Array<[string, string, boolean]> = [
      ['valid', good.key, true],
      ['unknown prefix', `crm_live_zzzzzzzz_${secret}`, false],
      ['wrong secret', `${good.key.slice(0, -1)}${secret.endsWith('a') ? 'b' : 'a'}`, false],
      ['revoked', revoked.key, false],
      ['expired', expired.key, false],
    ];
    for (const [label, key, ok] of cases) {
      calls.length = 0;
      const r = cache.authenticate(`Bearer ${key}`);
      assert.equal(r.ok, ok, label);
      assert.deepEqual(calls, [[32, 32]], `${label}: exactly one comparison of two 32-byte digests`);
    }
    // A malformed header never reaches a comparison: its form is public, nothing secret is probed.
    calls.length = 0;
    assert.equal(cache.authenticate('Bearer not-a-key').ok, false);
    assert.equal(calls.length, 0);
    // and the digest compared is the secret's SHA-256
    const seen: Buffer[] = [];
    const cache2 = new KeyCache(fakeStore([good.record]), {
      logger: silent,
      compare: (a, b) => (seen.push(a, b), timingSafeEqual(a, b)),
    });
    await cache2.refresh();
    cache2.authenticate(`Bearer crm_live_zzzzzzzz_${secret}`);
    assert.equal(seen[0].toString('hex'), hashSecret(secret));
  });
});
