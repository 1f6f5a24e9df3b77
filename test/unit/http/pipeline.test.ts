/**
 * The request pipelines called directly (no uWS, no socket): request in; status, headers (in wire
 * order) and body bytes out. The same functions serve every listener thread.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { Answer, RequestIn } from '../../../src/http/answer.js';
import { createAdminPipeline } from '../../../src/http/admin-app.js';
import { createSearchPipeline, SEARCH_PATH, type SearchAnswer } from '../../../src/http/public-app.js';
import { buildIndex } from '../../../src/index/build.js';
import { Metrics } from '../../../src/metrics/metrics.js';
import type { KeyCache } from '../../../src/auth/key-cache.js';
import { oneContactData } from '../../helpers/one-contact.js';

const ORG = '0a0a0a0a-0000-4000-8000-000000000001';
const OTHER = '0b0b0b0b-0000-4000-8000-000000000002';
const CONTACT = '1c1c1c1c-0000-4000-8000-000000000001';
const JSON_TYPE = 'application/json; charset=utf-8';
const logger = pino({ level: 'silent' });

const index = buildIndex(oneContactData(ORG, CONTACT, ['Meu PEDIDO chegou']));

/** Keys: 'Bearer good' has both scopes on ORG; 'Bearer narrow' lacks one; 'Bearer new' needs a store lookup first. */
function fakeKeys(): KeyCache {
  let looked = false;
  const principal = (scopes: string[]) => ({
    prefix: 'goodpref',
    organizationIds: new Set([ORG]),
    scopes: new Set(scopes),
  });
  return {
    ready: true,
    authenticate(authorization: string, _now: number, allowLookup = true) {
      if (authorization === 'Bearer good')
        return { ok: true, principal: principal(['contacts:read', 'messages:read']), hasRequiredScopes: true };
      if (authorization === 'Bearer narrow')
        return { ok: true, principal: principal(['contacts:read']), hasRequiredScopes: false };
      if (authorization === 'Bearer new') {
        if (looked)
          return { ok: true, principal: principal(['contacts:read', 'messages:read']), hasRequiredScopes: true };
        if (allowLookup) return { ok: false, prefix: null, lookup: Promise.resolve().then(() => void (looked = true)) };
      }
      return { ok: false, prefix: null };
    },
  } as unknown as KeyCache;
}

const search = createSearchPipeline({
  keys: fakeKeys(),
  logger,
  sunsetAt: null,
  indexes: { isReady: () => true, get: (org) => (org === ORG ? index : null) },
});

function req(method: string, path: string, query: string, headers: Record<string, string> = {}): RequestIn {
  const h = { 'x-request-id': 'rid-1', ...headers };
  let headerChars = 0;
  for (const [k, v] of Object.entries(h)) headerChars += k.length + v.length + 4;
  return { method, path, query, headers: h, headerChars };
}
const valid = new URLSearchParams({ organization_id: ORG, q: 'pedido' }).toString();
const text = (a: Answer) => (typeof a.body === 'string' ? a.body : Buffer.from(a.body).toString('utf8'));
const now = (a: SearchAnswer | Promise<SearchAnswer>): SearchAnswer => {
  assert.ok(!(a instanceof Promise), 'answered at once');
  return a;
};

function assertError(a: Answer, status: number, error: string, extraHeaders: Array<[string, string]> = []) {
  assert.equal(a.status, status, text(a));
  assert.deepEqual(a.headers, [
    ['Content-Type', JSON_TYPE],
    ['Cache-Control', 'no-store'],
    ['X-Request-Id', 'rid-1'],
    ...extraHeaders,
  ]);
  const body = JSON.parse(text(a)) as Record<string, unknown>;
  assert.equal(body.error, error);
  assert.equal(body.request_id, 'rid-1');
  assert.equal(typeof body.message, 'string');
  return body;
}

describe('answerSearchRequest', () => {
  it('404 off the path, 405 with Allow for other methods, before any key check', () => {
    assertError(now(search(req('GET', '/nope', valid))), 404, 'not_found');
    assertError(
      now(search(req('POST', SEARCH_PATH, valid, { authorization: 'Bearer good' }))),
      405,
      'method_not_allowed',
      [['Allow', 'GET, HEAD']],
    );
  });

  it('401 with WWW-Authenticate for a missing or bad key; 403 for a missing scope or organization', () => {
    assertError(now(search(req('GET', SEARCH_PATH, valid))), 401, 'unauthorized', [['WWW-Authenticate', 'Bearer']]);
    assertError(now(search(req('GET', SEARCH_PATH, valid, { authorization: 'Bearer bad' }))), 401, 'unauthorized', [
      ['WWW-Authenticate', 'Bearer'],
    ]);
    assertError(now(search(req('GET', SEARCH_PATH, valid, { authorization: 'Bearer narrow' }))), 403, 'forbidden');
    const other = new URLSearchParams({ organization_id: OTHER, q: 'pedido' }).toString();
    const a = now(search(req('GET', SEARCH_PATH, other, { authorization: 'Bearer good' })));
    assertError(a, 403, 'forbidden');
    assert.equal(a.organizationId, OTHER);
    assert.equal(a.keyPrefix, 'goodpref');
  });

  it('400 names every bad parameter in details', () => {
    const body = assertError(
      now(search(req('GET', SEARCH_PATH, 'limit=0', { authorization: 'Bearer good' }))),
      400,
      'invalid_request',
    );
    const params = (body.details as Array<{ parameter: string }>).map((d) => d.parameter);
    assert.ok(params.includes('organization_id') && params.includes('limit'), JSON.stringify(body.details));
  });

  it('200: the search body as bytes; HEAD: same headers plus Content-Length, no body', () => {
    const get = now(search(req('GET', SEARCH_PATH, valid, { authorization: 'Bearer good' })));
    assert.equal(get.status, 200);
    assert.deepEqual(get.headers, [
      ['Content-Type', JSON_TYPE],
      ['Cache-Control', 'no-store'],
      ['X-Request-Id', 'rid-1'],
    ]);
    assert.ok(get.body instanceof Uint8Array);
    const body = JSON.parse(text(get)) as { data: Array<{ contact: { id: string } }> };
    assert.equal(body.data.length, 1);
    assert.equal(body.data[0].contact.id, CONTACT);
    const length = get.body.byteLength;
    const head = now(search(req('HEAD', SEARCH_PATH, valid, { authorization: 'Bearer good' })));
    assert.equal(head.status, 200);
    assert.equal(head.head, true);
    assert.deepEqual(head.headers, [
      ['Content-Type', JSON_TYPE],
      ['Cache-Control', 'no-store'],
      ['X-Request-Id', 'rid-1'],
      ['Content-Length', String(length)],
    ]);
    assert.equal(text(head), '');
  });

  it('a bad X-Request-Id is replaced by a UUID; a Sunset adds its headers', () => {
    const a = now(search(req('GET', '/nope', '', { 'x-request-id': 'bad id!' })));
    assert.match(a.requestId, /^[0-9a-f-]{36}$/);
    const sunset = createSearchPipeline({
      keys: fakeKeys(),
      logger,
      sunsetAt: Date.UTC(2030, 0, 1),
      indexes: { isReady: () => true, get: () => null },
    });
    const s = now(sunset(req('GET', '/nope', '')));
    assert.deepEqual(
      s.headers.map(([k]) => k),
      ['Content-Type', 'Cache-Control', 'Sunset', 'Deprecation', 'X-Request-Id'],
    );
  });

  it('an unknown key prefix: a promise of the answer, computed after the lookup, with its own copy of the body', async () => {
    const pending = search(req('GET', SEARCH_PATH, valid, { authorization: 'Bearer new' }));
    assert.ok(pending instanceof Promise);
    const a = await pending;
    assert.equal(a.status, 200);
    const before = text(a);
    // another search reuses the thread's output buffer: the pending answer must not change
    now(
      search(
        req('GET', SEARCH_PATH, new URLSearchParams({ organization_id: ORG, q: 'zzzz' }).toString(), {
          authorization: 'Bearer good',
        }),
      ),
    );
    assert.equal(text(a), before);
  });

  it('a bug below the pipeline is a bare 500 with the request id, never a throw', () => {
    const broken = createSearchPipeline({
      keys: fakeKeys(),
      logger,
      sunsetAt: null,
      indexes: {
        isReady: () => true,
        get: () => {
          throw new Error('secret detail');
        },
      },
    });
    const a = now(broken(req('GET', SEARCH_PATH, valid, { authorization: 'Bearer good' })));
    const body = assertError(a, 500, 'internal_error');
    assert.ok(!JSON.stringify(body).includes('secret'));
  });
});

describe('answerAdminRequest', () => {
  const admin = createAdminPipeline({
    metrics: new Metrics(() => []),
    logger,
    catalog: { isReady: () => true, reload: async () => ({ reloaded: 1 }) },
  });
  it('healthz, 404, 405 with Allow, reload 400 and 200', async () => {
    const h = admin(req('GET', '/healthz', '')) as Answer;
    assert.equal(h.status, 200);
    assert.equal(JSON.parse(text(h)).status, 'ok');
    assertError(admin(req('GET', '/nope', '')) as Answer, 404, 'not_found');
    assertError(admin(req('GET', '/admin/reload', '')) as Answer, 405, 'method_not_allowed', [['Allow', 'POST']]);
    assertError(await admin(req('POST', '/admin/reload', 'organization_id=x')), 400, 'invalid_request');
    const bad = await admin(req('POST', '/admin/reload', 'organization_id=%zz'));
    assertError(bad, 400, 'invalid_request');
    assert.deepEqual(JSON.parse(bad.body as string).details, [
      { parameter: 'organization_id', message: 'has malformed percent-encoding' },
    ]);
    const r = await admin(req('POST', '/admin/reload', ''));
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(text(r)), { reloaded: 1 });
    const m = await admin(req('GET', '/metrics', ''));
    assert.equal(m.status, 200);
    assert.match(text(m), /http_requests_total/);
  });
});
