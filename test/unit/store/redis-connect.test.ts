/**
 * Why a command-line tool could not reach Redis, as its message says it: a refused connection
 * names the refusal, a Redis that accepts but never answers (CLIENT PAUSE) says so and how long
 * it waited. Both used to read "Connection is closed." (found by a fault-injection audit).
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { connectClient, plainCause, RedisConnection } from '../../../src/store/redis-connection.js';
import { RedisFleet } from '../../../src/store/redis-fleet.js';
import { waitFor } from '../../helpers/e2e.js';
import { freePort } from '../../helpers/server.js';
import { startRedis, type TestRedis } from '../../helpers/redis-server.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

test('a refused connection: the message names the refusal', async () => {
  const port = await freePort();
  await assert.rejects(
    RedisConnection.open(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1000, commandTimeoutMs: 1500 }),
    new RegExp(
      `^Error: store: redis unavailable at redis://127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`,
    ),
  );
});

test('a Redis that accepts the connection but does not answer: "no reply within N s"', async () => {
  const ctl = new Redis(redis.url);
  try {
    await ctl.call('CLIENT', 'PAUSE', '5000', 'ALL');
    await assert.rejects(
      RedisConnection.open(redis.url, { connectTimeoutMs: 1000, commandTimeoutMs: 1500 }),
      /^Error: store: redis unavailable at redis:\/\/127\.0\.0\.1:\d+: no reply within \d+\.\d s \(the connection opened, but Redis did not answer: paused, busy, or not Redis\)$/,
    );
  } finally {
    await ctl.call('CLIENT', 'UNPAUSE').catch(() => {});
    ctl.disconnect();
  }
  const ok = await RedisConnection.open(redis.url);
  await ok.close();
});

test('the server (background): a paused Redis is given up on after the connect timeout, not the command timeout', async () => {
  // a server started while Redis was paused kept both listeners closed ~12 s (README: it listens
  // anyway); it now opens a reconnecting connection after the connect timeout
  const ctl = new Redis(redis.url);
  try {
    await ctl.call('CLIENT', 'PAUSE', '4000', 'ALL');
    const t0 = performance.now();
    const conn = await RedisConnection.open(redis.url, {
      connectTimeoutMs: 500,
      commandTimeoutMs: 3000,
      background: true,
    });
    const ms = performance.now() - t0;
    try {
      assert.ok(ms < 2000, `resolved after ${ms.toFixed(0)} ms`);
      await ctl.call('CLIENT', 'UNPAUSE');
      // and it reconnects by itself once Redis answers
      for (let i = 0; i < 50 && !conn.connected; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(conn.connected, true);
    } finally {
      await conn.close();
    }
  } finally {
    await ctl.call('CLIENT', 'UNPAUSE').catch(() => {});
    ctl.disconnect();
  }
});

test("ioredis's words for a lost connection are put plainly (an import whose Redis died mid-way)", () => {
  assert.equal(plainCause("Stream isn't writeable and enableOfflineQueue options is false"), 'the connection was lost');
  assert.equal(plainCause('Connection is closed.'), 'the connection was lost');
  assert.equal(plainCause("Stream isn't ready yet"), 'the connection is not ready');
  assert.equal(plainCause('Command timed out'), 'Command timed out');
});

// The fleet audit: a cluster whose first ready check failed reconnected on its own and became
// ready, but the promise of that first connect() was never settled (ioredis 6), so an import
// started right after a master died waited out its 10 s and failed with the cluster ready.
test('connectClient: a client that becomes ready settles it, though its connect() never does', async () => {
  const emitter = new EventEmitter();
  const client = Object.assign(emitter, { connect: () => new Promise<void>(() => {}) });
  const done = connectClient(client as unknown as Redis);
  setTimeout(() => emitter.emit('ready'), 10);
  await done;
  assert.equal(emitter.listenerCount('ready'), 0, 'its listener is removed');
  const failing = Object.assign(new EventEmitter(), {
    connect: () => Promise.reject(new Error('None of startup nodes is available')),
  });
  await assert.rejects(connectClient(failing as unknown as Redis), /None of startup nodes is available/);
  assert.equal(failing.listenerCount('ready'), 0);
});

// A regression audit: a connection that turned into a cluster client (its one node was down at
// the start) kept the reload subscriber it had made on the plain client, on that one node, and
// reload requests stopped reaching the server whenever the node went down. On adopt, the fleet
// makes a new subscriber from the connection and drops the old one.
test('RedisFleet: a connection that adopts another client gets a new reload subscriber', async () => {
  let adopt = () => {};
  const made: Redis[] = [];
  const client = new Redis(redis.url);
  const conn = {
    client,
    duplicate: () => {
      const c = new Redis(redis.url, { lazyConnect: true });
      made.push(c);
      return c;
    },
    noteError: () => {},
    adoptions: 0,
    fail: (_what: string, err: unknown) => err as Error,
    onAdopt: (fn: () => void) => {
      adopt = fn;
      return () => {
        adopt = () => {};
      };
    },
  } as unknown as RedisConnection;
  const fleet = new RedisFleet(conn);
  const got: string[] = [];
  let readies = 0;
  try {
    const unsubscribe = await fleet.signals!.subscribe(
      (req) => got.push(req.requestId),
      () => readies++,
    );
    assert.equal(made.length, 1);
    adopt();
    await waitFor('the new subscriber', 5_000, async () => readies === 1);
    assert.equal(made.length, 2);
    await waitFor('the old one dropped', 5_000, async () => made[0].status === 'end');
    await client.publish('reload', JSON.stringify({ requestId: 'after', organizationId: null }));
    await waitFor('the request through the new subscriber', 5_000, async () => got.includes('after'));
    await unsubscribe();
    await waitFor('the new one dropped on unsubscribe', 5_000, async () => made[1].status === 'end');
  } finally {
    client.disconnect();
    for (const c of made) c.disconnect();
  }
});
