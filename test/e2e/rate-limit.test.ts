/**
 * RATE_LIMIT_RPS on the real server: the variables are read, and with SERVER_THREADS=2 the
 * buckets are shared (one SharedArrayBuffer table), so two threads grant a key its burst once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKey } from '../../src/auth/api-key.js';
import { SEARCH_PATH } from '../../src/http/public-app.js';
import { openStores } from '../../src/store/open-store.js';
import { publishOneContact } from '../helpers/one-contact.js';
import { rawGet, rawOnce } from '../helpers/raw-http.js';
import {
  baseEnv,
  createKey,
  startServer,
  tempDataDir,
  type CreatedKey,
  type RunningServer,
  keyRecord,
} from '../helpers/server.js';

const X = '0b0b0b0b-0000-4000-8000-000000000001';

it('the real server reads RATE_LIMIT_RPS / RATE_LIMIT_BURST', async () => {
  const data = tempDataDir();
  const k = generateKey();
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  await store.keys.putKey(keyRecord(k.prefix, k.hash, [X], { name: 'rl' }));
  await store.close();
  const server = await startServer({
    DATA_DIR: data.dir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_RPS: '0.5',
    RATE_LIMIT_BURST: '2',
  });
  try {
    const url = `${server.url}${SEARCH_PATH}?organization_id=${X}&q=pedido`;
    const statuses: number[] = [];
    let last: Response | null = null;
    for (let i = 0; i < 3; i++) {
      last = await fetch(url, { headers: { authorization: `Bearer ${k.key}` } });
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.equal(last!.headers.get('retry-after'), '2');
    assert.equal(((await last!.json()) as { error: string }).error, 'too_many_requests');
  } finally {
    assert.equal(await server.stop(), 0);
    data.cleanup();
  }
});

describe('RATE_LIMIT_RPS with SERVER_THREADS=2', () => {
  const data = tempDataDir();
  let server: RunningServer;
  let key: CreatedKey;
  before(async () => {
    await publishOneContact(data.dir, X, '1d1d1d1d-0000-4000-8000-000000000001');
    key = await createKey(baseEnv({ DATA_DIR: data.dir }), [X], 'contacts:read,messages:read');
    server = await startServer({
      DATA_DIR: data.dir,
      SERVER_THREADS: '2',
      RATE_LIMIT_RPS: '0.01',
      RATE_LIMIT_BURST: '10',
    });
  });
  after(async () => {
    await server?.stop();
    data.cleanup();
  });

  it('40 requests on 40 connections over 2 threads: exactly the burst of 10 is answered, the rest 429', async () => {
    const port = Number(new URL(server.url).port);
    const request = rawGet(`${SEARCH_PATH}?organization_id=${X}&q=pedido`, [['Authorization', `Bearer ${key.key}`]]);
    // A fresh connection a request (the kernel spreads them over the threads), two at a time so
    // both threads take from the buckets concurrently.
    const get = async () => {
      const r = await rawOnce(port, request);
      return r.kind === 'response' ? r.status : 0;
    };
    const statuses: number[] = [];
    for (let i = 0; i < 40; i += 2) statuses.push(...(await Promise.all([get(), get()])));
    assert.equal(statuses.filter((s) => s === 200).length, 10, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, 30, statuses.join(','));
  });
});
