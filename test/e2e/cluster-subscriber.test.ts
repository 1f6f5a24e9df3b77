/**
 * A server's reload subscriber on a Redis Cluster whose every node is gone: ioredis's cluster
 * subscriber picked another node the moment a connection ended, with no delay, ~2,400 connections
 * a second (one core busy, memory growing: 3 GB in 18 minutes on a test server whose Redis was
 * stopped under it). src/store/redis-connection.ts (throttleSubscriber) holds it to one pick every
 * 0.5 s, as the other clients reconnect.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectRedis } from '../../src/store/redis-connection.js';
import { startCluster, type TestCluster } from '../helpers/redis-cluster.js';

describe('the cluster subscriber with every node down', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop().catch(() => {});
  });

  it('tries another node at most every 0.5 s, and stops trying once disconnected', async () => {
    const { client, duplicate } = await connectRedis(cluster.url, {
      commandTimeoutMs: 2000,
      connectTimeoutMs: 1000,
      background: true,
    });
    const sub = duplicate();
    sub.on('error', () => {});
    await sub.connect();
    await sub.subscribe('cluster-subscriber-test');
    for (const port of cluster.ports) await cluster.kill(port);
    // each pick of a node makes a new connection object: count the distinct ones seen over 2 s
    const internals = sub as unknown as { subscriber: { getInstance(): object | null } };
    const seen = new Set<object>();
    const until = Date.now() + 2000;
    while (Date.now() < until) {
      const instance = internals.subscriber.getInstance();
      if (instance !== null) seen.add(instance);
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(seen.size <= 7, `${seen.size} subscriber connections in 2 s (at most 1 + 2 s / 0.5 s expected)`);
    sub.disconnect();
    const afterStop = internals.subscriber.getInstance();
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(internals.subscriber.getInstance(), afterStop, 'no new pick once disconnected');
    client.disconnect();
  });
});
