/**
 * SERVER_THREADS=2 answers like one thread where a caller can tell: a revoked key, once refused,
 * is refused by every thread (the main thread's key listings reach all threads before they
 * authenticate again, and a thread's lookup that reads a key revoked reaches them before it
 * answers), and /metrics counts every response answered before the scrape.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publishOneContact } from '../helpers/one-contact.js';
import { rawGet, rawOnce } from '../helpers/raw-http.js';
import {
  baseEnv,
  createKey,
  keysCli,
  startServer,
  tempDataDir,
  type CreatedKey,
  type RunningServer,
} from '../helpers/server.js';

const ORG = '0d0d0d0d-0000-4000-8000-000000000001';
const data = tempDataDir();
let server: RunningServer;
let port: number;

/** The status of one search on a fresh connection: the kernel spreads connections over the threads. */
async function status(key: CreatedKey): Promise<number> {
  const r = await rawOnce(
    port,
    rawGet(`/contacts/message-search?organization_id=${ORG}&q=pedido`, [['Authorization', `Bearer ${key.key}`]]),
  );
  assert.equal(r.kind, 'response');
  return r.kind === 'response' ? r.status : 0;
}

/**
 * Revokes `key`, waits for its first 401 (within 2 s), then asserts that `requests` more on fresh
 * connections (spread over the threads) are all refused.
 */
async function revokeThenRefusedByAll(key: CreatedKey, round: number, requests: number): Promise<void> {
  const r = await keysCli(['revoke', key.prefix], baseEnv({ DATA_DIR: data.dir }));
  assert.equal(r.code, 0, r.stderr);
  const revokedAt = Date.now();
  let seen = 0;
  while ((seen = await status(key)) === 200) assert.ok(Date.now() - revokedAt < 2000, 'refused within 2 s');
  assert.equal(seen, 401);
  const after: number[] = [];
  for (let i = 0; i < requests; i++) after.push(await status(key));
  assert.deepEqual(after, Array(requests).fill(401), `round ${round}: every request after the first 401`);
}

describe('SERVER_THREADS=2 answers as one server', () => {
  before(async () => {
    await publishOneContact(data.dir, ORG, '1f1f1f1f-0000-4000-8000-000000000001');
    server = await startServer({ DATA_DIR: data.dir, SERVER_THREADS: '2' });
    port = Number(new URL(server.url).port);
  });
  after(async () => {
    assert.equal(await server?.stop(), 0);
    data.cleanup();
  });

  it('a revoked key: refused within 2 s, and once one thread refuses it no thread answers it', async () => {
    for (let round = 0; round < 3; round++) {
      const key = await createKey(baseEnv({ DATA_DIR: data.dir }), [ORG], 'contacts:read,messages:read');
      // the key is known to both threads (a fresh key may be looked up first)
      for (let i = 0; i < 10; i++) assert.equal(await status(key), 200);
      await revokeThenRefusedByAll(key, round, 30);
    }
  });

  it('a key revoked before one thread ever saw it: once a thread refuses it, no thread answers it', async () => {
    // One request before the revocation: one thread looks the key up and holds it as valid, the
    // other has never seen it. Its first request after the revocation looks the key up, reads it
    // revoked, and refuses it: by then the thread that holds it must have the revocation too (it
    // answered 200 until the next key listing, up to a second later).
    for (let round = 0; round < 6; round++) {
      const key = await createKey(baseEnv({ DATA_DIR: data.dir }), [ORG], 'contacts:read,messages:read');
      assert.equal(await status(key), 200);
      await revokeThenRefusedByAll(key, round, 20);
    }
  });

  it('/metrics counts every response answered before the scrape, over both threads', async () => {
    const key = await createKey(baseEnv({ DATA_DIR: data.dir }), [ORG], 'contacts:read,messages:read');
    const count = async () => {
      const text = await (await fetch(`${server.adminUrl}/metrics`)).text();
      const m = /^http_requests_total\{listener="public",status="200"\} (\d+)$/m.exec(text);
      return Number(m?.[1] ?? 0);
    };
    await status(key); // the fresh key's lookup is not part of the count below
    for (let round = 0; round < 5; round++) {
      const before = await count();
      const n = 20;
      for (let i = 0; i < n; i++) assert.equal(await status(key), 200);
      assert.equal(await count(), before + n, `round ${round}`);
    }
  });
});
