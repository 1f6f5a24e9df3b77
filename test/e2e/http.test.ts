/**
 * CONTRACT 5-6 from outside: the real server process, keys made with the real CLI, real HTTP.
 * Every error status with its headers and whole body; HEAD; X-Request-Id; revocation; logs.
 */
import assert from 'node:assert/strict';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../src/auth/api-key.js';
import { openStores } from '../../src/store/open-store.js';
import {
  baseEnv,
  createKey,
  keysCli,
  startServer,
  tempDataDir,
  type CreatedKey,
  type RunningServer,
} from '../helpers/server.js';
import { oneContactData } from '../helpers/one-contact.js';

const ORG_A = '0a0a0a0a-0000-4000-8000-000000000001'; // has data
const ORG_B = '0b0b0b0b-0000-4000-8000-000000000002'; // granted, no snapshot
const ORG_C = '0c0c0c0c-0000-4000-8000-000000000003'; // never granted
const CONTACT = '1c1c1c1c-0000-4000-8000-000000000001';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const data = tempDataDir();
const env = baseEnv({ DATA_DIR: data.dir });
let server: RunningServer;
let full: CreatedKey;
let contactsOnly: CreatedKey;
let toRevoke: CreatedKey;
const expiredKey = 'crm_live_expired1_' + 'E'.repeat(32);
const allKeys: string[] = [];

const SEARCH = '/contacts/message-search';
const qs = (params: Record<string, string>) => '?' + new URLSearchParams(params).toString();

async function call(
  path: string,
  init: { method?: string; key?: string; auth?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.auth !== undefined) headers.authorization = init.auth;
  const res = await fetch(server.url + path, { method: init.method ?? 'GET', headers });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : null,
  };
}

/** The headers every response carries, and the error body exactly (request_id = X-Request-Id). */
function assertError(
  r: Awaited<ReturnType<typeof call>>,
  status: number,
  error: string,
  extra: Record<string, unknown> = {},
) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.equal(r.headers.get('cache-control'), 'no-store');
  const id = r.headers.get('x-request-id');
  assert.ok(id && /^[A-Za-z0-9._-]{1,128}$/.test(id));
  assert.equal(r.headers.get('sunset'), null);
  const body = r.json!;
  assert.equal(typeof body.message, 'string');
  assert.ok((body.message as string).length > 0);
  assert.deepEqual(body, { error, message: body.message, request_id: id, ...extra });
  assert.deepEqual(Object.keys(body), ['error', 'message', 'request_id', ...Object.keys(extra)]);
  return body;
}

before(async () => {
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  await store.snapshots.publishSnapshot(oneContactData(ORG_A, CONTACT, ['Meu PEDIDO chegou']));
  // An expired key cannot be made with the CLI (it refuses past dates), so it goes in directly.
  await store.keys.putKey({
    prefix: 'expired1',
    name: 'expired',
    hash: hashSecret('E'.repeat(32)),
    organization_ids: [ORG_A],
    scopes: ['contacts:read', 'messages:read'],
    created_at: '2024-01-01T00:00:00.000Z',
    expires_at: '2024-06-01T00:00:00.000Z',
    revoked_at: null,
    last_used_at: null,
  });
  await store.close();
  [full, contactsOnly, toRevoke] = await Promise.all([
    createKey(env, [ORG_A.toUpperCase(), ORG_B], 'contacts:read,messages:read', ['--name', 'full']),
    createKey(env, [ORG_A], 'contacts:read'),
    createKey(env, [ORG_A], 'messages:read,contacts:read'),
  ]);
  allKeys.push(full.key, contactsOnly.key, toRevoke.key);
  server = await startServer({ DATA_DIR: data.dir });
});

after(async () => {
  const code = await server?.stop();
  data.cleanup();
  assert.equal(code, 0, 'SIGTERM stops the server with exit code 0');
});

describe('routing (decided before authentication)', () => {
  for (const path of [
    '/',
    '/contacts',
    '/contacts/123',
    '/contacts/123/messages',
    '/messages/search',
    '/conversations',
    '/conversations/1',
    '/webhooks',
    '/contacts/message-search/',
    '/healthz',
    '/metrics',
  ]) {
    it(`404 for ${path}`, async () => {
      assertError(await call(path), 404, 'not_found');
      assertError(await call(path, { key: full.key }), 404, 'not_found');
    });
  }
  it('404 for POST /webhooks', async () => {
    assertError(await call('/webhooks', { method: 'POST' }), 404, 'not_found');
  });
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    it(`405 with Allow for ${method} on the search path`, async () => {
      const r = await call(SEARCH + qs({ organization_id: ORG_A, q: 'pedido' }), { method, key: full.key });
      assertError(r, 405, 'method_not_allowed');
      assert.equal(r.headers.get('allow'), 'GET, HEAD');
    });
  }
});

describe('401: same answer for every kind of bad key', () => {
  const valid = SEARCH + qs({ organization_id: ORG_A, q: 'pedido' });
  const cases: Array<[string, () => string | undefined]> = [
    ['missing header', () => undefined],
    ['empty header', () => ''],
    ['Basic scheme', () => 'Basic ' + Buffer.from('a:b').toString('base64')],
    ['Bearer without token', () => 'Bearer'],
    ['malformed key', () => 'Bearer crm_live_short_secret'],
    ['test-mode key form', () => `Bearer ${full.key.replace('crm_live_', 'crm_test_')}`],
    ['unknown prefix', () => `Bearer crm_live_zzzzzzzz_${full.key.slice(-32)}`],
    ['wrong secret', () => `Bearer ${full.key.slice(0, -1)}${full.key.endsWith('A') ? 'B' : 'A'}`],
    ['expired key', () => `Bearer ${expiredKey}`],
  ];
  const messages = new Set<unknown>();
  for (const [name, auth] of cases) {
    it(name, async () => {
      const r = await call(valid, { auth: auth() });
      const body = assertError(r, 401, 'unauthorized');
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      messages.add(body.message);
      assert.equal(messages.size, 1, 'one message for every kind');
    });
  }
  it('401 comes before 400 and 403', async () => {
    assertError(await call(SEARCH + '?limit=0', { auth: 'Bearer nope' }), 401, 'unauthorized');
    assertError(await call(SEARCH + qs({ organization_id: ORG_C, q: 'pedido' })), 401, 'unauthorized');
  });
});

describe('authorization order (CONTRACT 5)', () => {
  it('403 for a key without both scopes, before parameter problems', async () => {
    assertError(
      await call(SEARCH + qs({ organization_id: ORG_A, q: 'pedido' }), { key: contactsOnly.key }),
      403,
      'forbidden',
    );
    assertError(await call(SEARCH + '?limit=0', { key: contactsOnly.key }), 403, 'forbidden');
  });
  it('400 lists every parameter problem at once', async () => {
    const r = await call(SEARCH + '?limit=0&offset=-1&messages_limit=21&match=x&from=2025-02-30', { key: full.key });
    const body = r.json!;
    assertError(r, 400, 'invalid_request', { details: body.details });
    const params = (body.details as Array<{ parameter: string; message: string }>).map((d) => d.parameter);
    for (const p of ['organization_id', 'limit', 'offset', 'messages_limit', 'match', 'from'])
      assert.ok(params.includes(p), `${p} in ${params}`);
    assert.ok(
      ['q', 'keywords', 'keyword'].some((p) => params.includes(p)),
      'the missing term is reported',
    );
    for (const d of body.details as Array<Record<string, unknown>>) {
      assert.deepEqual(Object.keys(d), ['parameter', 'message']);
      assert.equal(typeof d.message, 'string');
    }
  });
  it('400 comes before the organization check', async () => {
    const r = await call(SEARCH + qs({ organization_id: ORG_C, q: 'pedido', limit: '101' }), { key: full.key });
    assertError(r, 400, 'invalid_request', {
      details: [
        { parameter: 'limit', message: r.json!.details && (r.json!.details as Array<{ message: string }>)[0].message },
      ],
    });
  });
  it('403 for an organization the key does not grant, with or without data', async () => {
    assertError(await call(SEARCH + qs({ organization_id: ORG_C, q: 'pedido' }), { key: full.key }), 403, 'forbidden');
    assertError(
      await call(SEARCH + qs({ organization_id: ORG_B, q: 'pedido' }), { key: contactsOnly.key }),
      403,
      'forbidden',
    );
  });
});

describe('200', () => {
  it('bearer scheme is case-insensitive; an organization id in upper case is the same one', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const r = await call(SEARCH + qs({ organization_id: ORG_A.toUpperCase(), q: 'pedido' }), {
        auth: `${scheme} ${full.key}`,
      });
      assert.equal(r.status, 200, r.text);
    }
  });
  it('a granted organization without a snapshot: empty page', async () => {
    const r = await call(SEARCH + qs({ organization_id: ORG_B, q: 'Pedido' }), { key: full.key });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.deepEqual(r.json, {
      data: [],
      pagination: { limit: 50, offset: 0, count: 0, has_more: false, next_offset: null },
      query: {
        organization_id: ORG_B,
        terms: ['pedido'],
        match: 'any',
        direction: 'inbound',
        channel: null,
        from: null,
        to: null,
      },
    });
  });
  it('the whole body on a published snapshot', async () => {
    const r = await call(SEARCH + qs({ organization_id: ORG_A, q: 'pedido' }), { key: full.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, {
      data: [
        {
          contact: {
            id: CONTACT,
            organization_id: ORG_A,
            name: 'Ana',
            phone: '+5511999990000',
            email: null,
            avatar_url: null,
            source: 'whatsapp',
          },
          match_count: 1,
          conversations_count: 1,
          first_matched_at: '2025-01-02T03:04:05.000Z',
          last_matched_at: '2025-01-02T03:04:05.000Z',
          messages: [
            {
              id: 'm1',
              conversation_id: 'c1',
              channel: 'whatsapp',
              direction: 'inbound',
              content: 'Meu PEDIDO chegou',
              sent_at: '2025-01-02T03:04:05.000Z',
            },
          ],
        },
      ],
      pagination: { limit: 50, offset: 0, count: 1, has_more: false, next_offset: null },
      query: {
        organization_id: ORG_A,
        terms: ['pedido'],
        match: 'any',
        direction: 'inbound',
        channel: null,
        from: null,
        to: null,
      },
    });
  });
  it('a 1000-character accented keywords fits the header limit', async () => {
    const r = await call(SEARCH + qs({ organization_id: ORG_A, keywords: 'ã'.repeat(997) + ',ab' }), { key: full.key });
    assert.equal(r.status, 200, r.text);
  });
  it('HEAD: the 200 headers and no body', async () => {
    const path = SEARCH + qs({ organization_id: ORG_A, q: 'pedido' });
    const get = await call(path, { key: full.key });
    const head = await call(path, { method: 'HEAD', key: full.key });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(head.headers.get('cache-control'), 'no-store');
    assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(get.text)));
    const headErr = await call(path, { method: 'HEAD' });
    assert.equal(headErr.status, 401);
    assert.equal(headErr.text, '');
  });
});

describe('X-Request-Id', () => {
  const path = '/nowhere';
  it('echoes a well-formed caller id, also in the body', async () => {
    for (const id of ['a', 'req-1.2_X', 'x'.repeat(128)]) {
      const r = await call(path, { headers: { 'x-request-id': id } });
      assert.equal(r.headers.get('x-request-id'), id);
      assert.equal(r.json!.request_id, id);
    }
  });
  it('replaces a malformed one with a new id', async () => {
    const seen = new Set<string>();
    for (const id of ['x'.repeat(129), 'has space', 'semi;colon', 'slash/id']) {
      const r = await call(path, { headers: { 'x-request-id': id } });
      const got = r.headers.get('x-request-id')!;
      assert.match(got, UUID_RE);
      assert.equal(r.json!.request_id, got);
      seen.add(got);
    }
    assert.equal(seen.size, 4);
    const none = await call(path);
    assert.match(none.headers.get('x-request-id')!, UUID_RE);
  });
});

describe('revocation', () => {
  it('a revoked key is refused within 2 seconds', async () => {
    const path = SEARCH + qs({ organization_id: ORG_A, q: 'pedido' });
    assert.equal((await call(path, { key: toRevoke.key })).status, 200);
    const r = await keysCli(['revoke', toRevoke.prefix], env);
    assert.equal(r.code, 0, r.stderr);
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 2000) {
      await new Promise((res) => setTimeout(res, 50));
      status = (await call(path, { key: toRevoke.key })).status;
    }
    const last = await call(path, { key: toRevoke.key });
    assertError(last, 401, 'unauthorized');
    assert.equal(last.headers.get('www-authenticate'), 'Bearer');
  });
});

describe('admin listener', () => {
  it('/healthz, /readyz, /metrics, POST /admin/reload', async () => {
    const health = await fetch(server.adminUrl + '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok', version: '0.1.0-beta' });
    assert.equal((await fetch(server.adminUrl + '/readyz')).status, 200);
    const metrics = await (await fetch(server.adminUrl + '/metrics')).text();
    assert.match(metrics, /http_requests_total\{listener="public",status="200"\} \d+/);
    assert.match(metrics, /http_request_duration_seconds_bucket/);
    assert.match(metrics, /process_cpu_user_seconds_total/);
    // listed before any POST /admin/reload (a Redis fleet reloads by broadcast and may never see one)
    assert.match(metrics, /^catalog_admin_reloads_total\{result="error"\} 0$/m);
    assert.match(metrics, /^catalog_admin_reloads_total\{result="ok"\} \d+$/m);
    const reload = await fetch(server.adminUrl + '/admin/reload?organization_id=' + ORG_A, { method: 'POST' });
    assert.equal(reload.status, 200);
    assert.equal(reload.headers.get('content-type'), 'application/json; charset=utf-8');
    await reload.json();
    const wrong = await fetch(server.adminUrl + '/admin/reload');
    assert.equal(wrong.status, 405);
    // a reload that fails (the store unreadable: a file where its snapshots folder is) is counted
    // and timed: the histogram's count is every call (failures were left out of it)
    const snapshots = path.join(data.dir, 'snapshots');
    renameSync(snapshots, `${snapshots}.aside`);
    writeFileSync(snapshots, 'not a folder\n');
    try {
      const failed = await fetch(server.adminUrl + '/admin/reload', { method: 'POST' });
      assert.equal(failed.status, 503);
      assert.equal(failed.headers.get('retry-after'), '1');
      await failed.text();
    } finally {
      rmSync(snapshots);
      renameSync(`${snapshots}.aside`, snapshots);
    }
    const after = await (await fetch(server.adminUrl + '/metrics')).text();
    const ok = Number(/^catalog_admin_reloads_total\{result="ok"\} (\d+)$/m.exec(after)?.[1]);
    assert.match(after, /^catalog_admin_reloads_total\{result="error"\} 1$/m);
    assert.match(after, new RegExp(`^catalog_admin_reload_duration_seconds_count ${ok + 1}$`, 'm'));
    assert.equal((await fetch(server.adminUrl + '/contacts/message-search')).status, 404);
  });
});

describe('logs', () => {
  it('one JSON line per request with the key prefix, never a key', async () => {
    await call(SEARCH + qs({ organization_id: ORG_A, q: 'pedido' }), {
      key: full.key,
      headers: { 'x-request-id': 'log-check-1' },
    });
    await new Promise((r) => setTimeout(r, 100));
    const out = server.output();
    for (const key of [...allKeys, expiredKey]) {
      assert.ok(!out.includes(key), 'a key leaked into the logs');
      assert.ok(!out.includes(key.slice(-32)), 'a secret leaked into the logs');
    }
    const line = out.split('\n').find((l) => l.includes('"log-check-1"'));
    assert.ok(line, 'request line logged');
    const entry = JSON.parse(line!) as Record<string, unknown>;
    assert.equal(entry.level, 'info');
    assert.equal(entry.method, 'GET');
    assert.equal(entry.path, SEARCH);
    assert.equal(entry.status, 200);
    assert.equal(entry.organization_id, ORG_A);
    assert.equal(entry.key_prefix, full.prefix);
    assert.equal(typeof entry.duration_ms, 'number');
  });
});

describe('in-process: failures inside the handler', () => {
  it('an uncaught error is a 500 with the contract body, logged with the request id; serving goes on; 503 while loading', async () => {
    const { createPublicApp } = await import('../../src/http/public-app.js');
    const { createAdminApp } = await import('../../src/http/admin-app.js');
    const { loadUws } = await import('../../src/http/uws.js');
    const { KeyCache } = await import('../../src/auth/key-cache.js');
    const { generateKey } = await import('../../src/auth/api-key.js');
    const { Metrics } = await import('../../src/metrics/metrics.js');
    const { pino } = await import('pino');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
    const k = generateKey();
    const record = {
      prefix: k.prefix,
      name: '',
      hash: k.hash,
      organization_ids: [ORG_A],
      scopes: ['contacts:read', 'messages:read'],
      created_at: '',
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    };
    const store = {
      listKeys: async () => [record],
      touchKeys: async () => {},
    } as unknown as import('../../src/auth/key-store.js').ServingKeyStore;
    const keys = new KeyCache(store, { logger });
    await keys.refresh();
    const uws = loadUws();
    let ready = false;
    let explode = true;
    const metrics = new Metrics(() => []);
    const app = createPublicApp({
      uws,
      keys,
      metrics,
      logger,
      sunsetAt: null,
      indexes: {
        isReady: () => ready,
        get: () => {
          if (explode) throw new Error('secret internal detail');
          return null;
        },
      },
    });
    const admin = createAdminApp({ uws, metrics, logger, catalog: { isReady: () => ready, reload: async () => ({}) } });
    const listen = (a: typeof app) =>
      new Promise<{ port: number; socket: unknown }>((resolve) =>
        a.listen('127.0.0.1', 0, (s) => resolve({ port: uws.us_socket_local_port(s as never), socket: s })),
      );
    const pub = await listen(app);
    const adm = await listen(admin);
    try {
      const url = `http://127.0.0.1:${pub.port}${SEARCH}${qs({ organization_id: ORG_A, q: 'pedido' })}`;
      const get = (id: string) => fetch(url, { headers: { authorization: `Bearer ${k.key}`, 'x-request-id': id } });
      let r = await get('while-loading');
      assert.equal(r.status, 503);
      assert.deepEqual(await r.json(), {
        error: 'unavailable',
        message: 'The service is not ready yet; retry shortly.',
        request_id: 'while-loading',
      });
      r = await fetch(`http://127.0.0.1:${adm.port}/readyz`, { headers: { 'x-request-id': 'rz' } });
      assert.equal(r.status, 503);
      assert.equal(((await r.json()) as { error: string }).error, 'unavailable');
      ready = true;
      r = await get('boom-1');
      assert.equal(r.status, 500);
      const text = await r.text();
      assert.deepEqual(JSON.parse(text), {
        error: 'internal_error',
        message: 'An internal error occurred; retry with backoff.',
        request_id: 'boom-1',
      });
      assert.ok(!text.includes('secret internal detail') && !text.includes(' at '));
      assert.ok(
        lines.some((l) => l.includes('"boom-1"') && l.includes('secret internal detail') && l.includes('"level":50')),
      );
      explode = false;
      assert.equal((await get('after-boom')).status, 200);
    } finally {
      uws.us_listen_socket_close(pub.socket as never);
      uws.us_listen_socket_close(adm.socket as never);
      await keys.stop();
    }
  });
});
