/**
 * The direct chunk reader (resp-hash-reader.ts) against a real redis-server: values of every size
 * (empty, split over many reads, holding CRLF), absent fields, AUTH and SELECT, and each way it
 * stops early (refused, paused, unexpected reply, a value too long, a connection cut midway),
 * after which a snapshot load reads the rest through ioredis and gets the same index.
 */
import assert from 'node:assert/strict';
import { createServer, connect, type Server } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { keySlot } from '../../../src/store/redis-connection.js';
import { ReplyTimeout, readHashFields, type RespTarget } from '../../../src/store/resp-hash-reader.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { RedisConnection } from '../../../src/store/redis-connection.js';
import { freePort } from '../../helpers/server.js';
import { startRedis, type TestRedis } from '../../helpers/redis-server.js';
import { generate, orgData } from '../../fixtures/gen-data.js';

let redis: TestRedis;
let ctl: Redis;
before(async () => {
  redis = await startRedis();
  ctl = new Redis(redis.url);
});
after(async () => {
  ctl?.disconnect();
  await redis?.stop();
});

const target = (over: Partial<RespTarget> = {}): RespTarget => ({
  host: '127.0.0.1',
  port: redis.port,
  connectTimeoutMs: 1000,
  replyTimeoutMs: 1000,
  ...over,
});

/** Reads `fields` of `key`, collecting copies of what onValue was given. */
async function collect(t: RespTarget, key: string, fields: string[], maxBytes: number, window = 3) {
  const got: Array<Buffer | null> = [];
  const r = await readHashFields(t, {
    key,
    fields,
    maxBytes,
    window,
    onValue: (i, v) => {
      assert.equal(i, got.length, 'values arrive in order');
      got.push(v === null ? null : Buffer.from(v));
    },
  });
  return { ...r, got };
}

describe('readHashFields', () => {
  const values = [
    Buffer.alloc(0),
    Buffer.from('a\r\nb\r\n$5\r\n'),
    Buffer.alloc(200_000, 7), // many socket reads
    Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) & 255)),
    Buffer.from('last'),
  ];
  before(async () => {
    await ctl.del('h');
    for (let i = 0; i < values.length; i++) await ctl.hset('h', String(i), values[i]);
  });

  test('every value, in order, byte for byte; an absent field is null', async () => {
    for (const window of [1, 3, 8]) {
      const r = await collect(target(), 'h', ['0', '1', '2', 'nope', '3', '4'], 200_000, window);
      assert.equal(r.failure, null);
      assert.equal(r.delivered, 6);
      assert.deepEqual(r.got, [values[0], values[1], values[2], null, values[3], values[4]]);
    }
  });

  test('what onValue throws rejects the read as is', async () => {
    const boom = new Error('boom at 2');
    await assert.rejects(
      readHashFields(target(), {
        key: 'h',
        fields: ['0', '1', '2', '3'],
        maxBytes: 200_000,
        window: 2,
        onValue: (i) => {
          if (i === 2) throw boom;
        },
      }),
      (err) => err === boom,
    );
  });

  test('a value longer than maxBytes stops the read before it, not delivered', async () => {
    const r = await collect(target(), 'h', ['0', '1', '2', '3'], 100_000);
    assert.equal(r.delivered, 2);
    assert.match(r.failure!.message, /^redis direct read of h: unexpected reply "\$200000" to HGET$/);
  });

  test('an error reply (a key of another type) stops it, with Redis words', async () => {
    await ctl.set('plain', 'x');
    const r = await collect(target(), 'plain', ['0'], 10);
    assert.equal(r.delivered, 0);
    assert.match(r.failure!.message, /^redis direct read of plain: Redis replied WRONGTYPE /);
  });

  test('a refused connection and a paused Redis stop it, nothing delivered', async () => {
    const refused = await collect(target({ port: await freePort() }), 'h', ['0'], 10);
    assert.equal(refused.delivered, 0);
    assert.match(refused.failure!.message, /ECONNREFUSED/);
    await ctl.call('CLIENT', 'PAUSE', '1200', 'ALL');
    try {
      const t0 = Date.now();
      const paused = await collect(target({ replyTimeoutMs: 300 }), 'h', ['0'], 10);
      assert.equal(paused.delivered, 0);
      assert.match(paused.failure!.message, /^redis direct read of h: no reply within 300 ms$/);
      assert.ok(paused.failure instanceof ReplyTimeout);
      assert.ok(Date.now() - t0 < 1000);
    } finally {
      await ctl.call('CLIENT', 'UNPAUSE');
    }
  });

  test('AUTH with a user and password, SELECT of another database', async () => {
    await ctl.call('ACL', 'SETUSER', 'reader', 'on', '>s3cret', '~*', '+@all');
    const db3 = new Redis(`${redis.url}/3`);
    try {
      await db3.hset('in3', '0', 'third');
      const ok = await collect(target({ username: 'reader', password: 's3cret', db: 3 }), 'in3', ['0'], 10);
      assert.equal(ok.failure, null);
      assert.deepEqual(ok.got, [Buffer.from('third')]);
      const bad = await collect(target({ username: 'reader', password: 'wrong' }), 'h', ['4'], 10);
      assert.equal(bad.delivered, 0);
      assert.match(bad.failure!.message, /Redis replied WRONGPASS/);
    } finally {
      db3.disconnect();
      await ctl.call('ACL', 'DELUSER', 'reader');
    }
  });

  test('no fields: resolves at once', async () => {
    assert.deepEqual(await collect(target(), 'h', [], 10), { delivered: 0, failure: null, got: [] });
  });
});

test('keySlot: the slots Redis documents (CLUSTER KEYSLOT)', () => {
  assert.equal(keySlot('somekey'), 11058);
  assert.equal(keySlot('foo{hash_tag}'), 2515);
  assert.equal(keySlot('{hash_tag}'), 2515);
  assert.equal(keySlot('123456789'), 0x31c3);
  assert.equal(keySlot('{}x'), keySlot('{}x'));
  assert.notEqual(keySlot('{}x'), keySlot('x'), 'an empty tag hashes the whole key');
});

/** Publishes organization `org` with ~12 MB of messages: several 4 MiB chunks, read directly. */
function publishLarge(store: RedisStore, org: number) {
  const g = generate(org, 40, 3000);
  g.messages.forEach((m, i) => {
    if (i % 3 === 0) m.content = `${m.content} ${'ação '.repeat(1000)}`;
  });
  return store.snapshots.publishSnapshot(orgData(g));
}

/** A TCP proxy to Redis that ends every connection after `cutAfter` bytes from Redis. */
async function proxy(cutAfter: number): Promise<{ port: number; bytes: () => number; close: () => void }> {
  let bytes = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(redis.port, '127.0.0.1');
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      const room = cutAfter - bytes;
      bytes += Math.min(room, d.length);
      if (room > d.length) return void client.write(d);
      client.end(d.subarray(0, room));
      upstream.destroy();
    });
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { port, bytes: () => bytes, close: () => server.close() };
}

test('a snapshot load read directly, cut midway or not at all, gives the same index as through ioredis', async () => {
  const store = await RedisStore.connect(redis.url);
  try {
    const conn = (store as unknown as { conn: RedisConnection }).conn;
    const ref = await publishLarge(store, 7);
    const original = conn.directTarget.bind(conn);
    const sections = async (through: ((key: string) => RespTarget | null) | null) => {
      conn.directTarget = through ?? original;
      try {
        const flat = await store.snapshots.loadFlatIndex(ref);
        return Object.fromEntries(
          Object.entries(flat.sections).map(([k, a]) => [k, Buffer.from(a.buffer, a.byteOffset, a.byteLength)]),
        );
      } finally {
        conn.directTarget = original;
      }
    };
    const viaIoredis = await sections(() => null);
    const whole = await proxy(Number.POSITIVE_INFINITY);
    const cut = await proxy(5_000_000); // past the first chunk, within the second
    try {
      const direct = await sections((key) => ({ ...original(key)!, port: whole.port }));
      assert.ok(whole.bytes() > 8_000_000, 'the chunks came through the direct reader');
      const resumed = await sections((key) => ({ ...original(key)!, port: cut.port }));
      assert.equal(cut.bytes(), 5_000_000);
      assert.deepEqual(Object.keys(direct), Object.keys(viaIoredis));
      for (const k of Object.keys(viaIoredis)) {
        assert.ok(direct[k].equals(viaIoredis[k]), `section ${k} read directly`);
        assert.ok(resumed[k].equals(viaIoredis[k]), `section ${k} resumed through ioredis`);
      }
      assert.ok(original(`snap:{x}`) !== null, 'a ready single-node client gives its node');
    } finally {
      whole.close();
      cut.close();
    }
  } finally {
    await store.close();
  }
});

test('a direct read that times out fails the load at once, as a timeout through ioredis does', async () => {
  const store = await RedisStore.connect(redis.url);
  const silent: Server = createServer(() => {}); // accepts, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  try {
    const conn = (store as unknown as { conn: RedisConnection }).conn;
    const ref = await publishLarge(store, 8);
    const original = conn.directTarget.bind(conn);
    const port = (silent.address() as { port: number }).port;
    conn.directTarget = (key) => ({ ...original(key)!, port, replyTimeoutMs: 300 });
    const t0 = Date.now();
    await assert.rejects(store.snapshots.loadFlatIndex(ref), {
      message: `store: redis unavailable at ${redis.url}: Command timed out`,
    });
    assert.ok(Date.now() - t0 < 3000, 'no second wait through ioredis');
    conn.directTarget = original;
  } finally {
    silent.close();
    await store.close();
  }
});
