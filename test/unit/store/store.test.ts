/**
 * One suite per store interface (test/store/*.cases.ts), run against every backend (hono's shared
 * router cases): what one backend does, the other must do too. The Redis runs use a real
 * redis-server on a free port, and a local Redis Cluster.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { Unpackr } from 'msgpackr';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EmbeddedStore, snapshotFile } from '../../../src/store/embedded-store.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { RedisConnection } from '../../../src/store/redis-connection.js';
import { keySlot } from '../../../src/store/redis-connection.js';
import {
  CHUNK_MAX,
  encodeManifest,
  encodeSnapshot,
  parseManifest,
  prepareSnapshot,
  SnapshotDecoder,
  type Manifest,
} from '../../../src/store/snapshot-format.js';
import type { FlatIndex } from '../../../src/store/flat-index.js';
import type { SnapshotRef } from '../../../src/store/snapshot-store.js';
import type { Stores } from '../../../src/store/stores.js';
import { pidNamespace } from '../../../src/store/file-utils.js';
import { startCluster, type TestCluster } from '../../helpers/redis-cluster.js';
import { startRedis, type TestRedis } from '../../helpers/redis-server.js';
import { generate, orgData } from '../../fixtures/gen-data.js';
import { fleetCases } from './fleet.cases.js';
import { keyStoreCases } from './key-store.cases.js';
import { snapshotStoreCases } from './snapshot-store.cases.js';

interface Harness {
  name: string;
  open(): Promise<Stores>;
  /** Flips one byte of the first chunk of `ref`. */
  corruptChunk(stores: Stores, ref: SnapshotRef): Promise<void>;
  /** Rewrites the manifest of `ref` with another format version, or as `format` maps it (and a valid checksum). */
  setFormat(stores: Stores, ref: SnapshotRef, format: number | ((m: Manifest) => Manifest)): Promise<void>;
  /**
   * A pointer no reader can follow: 0, a version that is no number; 1, not the pointer's type at
   * all; 2, a negative version; 3, a number past the safe integers.
   */
  garblePointer(stores: Stores, org: string, how: number): Promise<void>;
  cleanup(): Promise<void>;
}

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const reformat = (bytes: Buffer, format: number | ((m: Manifest) => Manifest)): Uint8Array => {
  const m = unpackr.unpack(bytes.subarray(0, bytes.length - 4)) as Manifest;
  return encodeManifest(typeof format === 'number' ? { ...m, format } : format(m));
};

function embeddedHarness(): Harness {
  const dir = mkdtempSync(path.join(tmpdir(), 'store-test-'));
  return {
    name: 'embedded store',
    open: () => new EmbeddedStore(dir).open(),
    async corruptChunk(_s, ref) {
      const file = snapshotFile(dir, ref);
      const b = readFileSync(file);
      b[20] ^= 0xff;
      writeFileSync(file, b);
    },
    async setFormat(_s, ref, format) {
      const file = snapshotFile(dir, ref);
      const b = readFileSync(file);
      const mlen = b.readUInt32BE(b.length - 12);
      const at = b.length - 12 - mlen;
      const m = Buffer.from(reformat(b.subarray(at, at + mlen), format));
      const footer = Buffer.from(b.subarray(b.length - 12));
      footer.writeUInt32BE(m.length, 0);
      writeFileSync(file, Buffer.concat([b.subarray(0, at), m, footer]));
    },
    async garblePointer(_s, org, how) {
      const text = ['{"version":"abc"}', 'garbage', '{"version":-3}', '{"version":1e999}'][how];
      writeFileSync(path.join(dir, 'snapshots', org, 'CURRENT'), text);
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The Redis store on one node, or (`cluster`) on a local Redis Cluster of 3 masters and 3 replicas. */
function redisHarness(cluster = false): Harness {
  let redis: TestRedis | TestCluster;
  return {
    name: cluster ? 'redis store on a cluster' : 'redis store',
    async open() {
      redis ??= cluster ? await startCluster() : await startRedis();
      const store = await RedisStore.connect(redis.url);
      if (cluster) {
        assert.ok(store.client instanceof Cluster, 'REDIS_URL naming one node is detected as a cluster');
        // a server's loads read chunks from the node of their slot, directly (resp-hash-reader.ts)
        const key = 'snap:{97da2849-d73e-4438-a907-d090402c802d}:v:1';
        assert.equal(keySlot(key), Number(await store.client.cluster('KEYSLOT', key)));
        const conn = (store as unknown as { conn: RedisConnection }).conn;
        const node = store.client.slots[keySlot(key)][0];
        assert.equal(`${conn.directTarget(key)?.host}:${conn.directTarget(key)?.port}`, node);
      }
      return store;
    },
    async corruptChunk(s, ref) {
      const rs = s as RedisStore;
      const b = (await rs.client.hgetBuffer(rs.snapshots.versionKeyOf(ref), '0'))!;
      b[20] ^= 0xff;
      await rs.client.hset(rs.snapshots.versionKeyOf(ref), '0', b);
    },
    async setFormat(s, ref, format) {
      const rs = s as RedisStore;
      const b = (await rs.client.hgetBuffer(rs.snapshots.versionKeyOf(ref), 'manifest'))!;
      await rs.client.hset(rs.snapshots.versionKeyOf(ref), 'manifest', Buffer.from(reformat(b, format)));
    },
    async garblePointer(s, org, how) {
      const rs = s as RedisStore;
      const key = `snap:{${org}}:ptr`;
      if (how === 1) await rs.client.del(key).then(() => rs.client.set(key, 'garbage'));
      else await rs.client.hset(key, 'version', ['abc', '', '-3', '1e999'][how], 'previous', '0');
    },
    async cleanup() {
      await redis?.stop();
    },
  };
}

/** Every interface's cases against one backend, which opens once and shares its connection. */
function backendCases(h: Harness): void {
  describe(h.name, () => {
    let stores: Stores;
    before(async () => {
      stores = await h.open();
    });
    after(async () => {
      await stores?.close();
      await h.cleanup();
    });
    snapshotStoreCases(() => stores.snapshots, {
      corruptChunk: (ref) => h.corruptChunk(stores, ref),
      setFormat: (ref, format) => h.setFormat(stores, ref, format),
      garblePointer: (org, how) => h.garblePointer(stores, org, how),
    });
    keyStoreCases(() => stores.keys);
    fleetCases(() => stores.fleet);
  });
}

describe('snapshot format', () => {
  test('no chunk exceeds CHUNK_MAX when no single value does', () => {
    const g = generate(10, 2000, 20000);
    g.messages.forEach((m) => {
      m.content = 'x'.repeat(300);
    });
    const enc = encodeSnapshot(prepareSnapshot(orgData(g)), 1);
    const sizes = [...enc.chunks].map((c) => c.length);
    assert.ok(sizes.length > 1);
    for (const s of sizes) assert.ok(s <= CHUNK_MAX, `chunk of ${s} bytes`);
  });

  test('chunks from a ring of reused buffers are the same bytes, for a consumer holding up to reuse - 1', () => {
    const g = generate(11, 2000, 30000);
    g.messages.forEach((m, i) => {
      m.content = `${i} `.repeat(60);
    });
    const prepared = prepareSnapshot(orgData(g));
    const fresh = [...encodeSnapshot(prepared, 1).chunks].map((c) => Buffer.from(c));
    assert.ok(fresh.filter((c) => c.length >= CHUNK_MAX / 4).length >= 3, 'several full chunks');
    for (const reuse of [1, 2, 3]) {
      // the consumer keeps views of its last reuse - 1 chunks, and reads each as it lets it go
      const held: Uint8Array[] = [];
      const seen: Buffer[] = [];
      for (const chunk of encodeSnapshot(prepared, 1, reuse).chunks) {
        held.push(chunk);
        if (held.length === reuse) seen.push(Buffer.from(held.shift()!));
      }
      for (const c of held) seen.push(Buffer.from(c));
      assert.equal(seen.length, fresh.length);
      seen.forEach((c, i) => {
        assert.ok(c.equals(fresh[i]), `reuse ${reuse}: chunk ${i} differs`);
      });
    }
  });

  test('a loaded snapshot keeps none of its chunks alive (msgpackr held the last one it decoded)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { chunks, flat } = loadWatchingChunks();
    assert.ok(chunks.length >= 1);
    // a WeakRef's target is kept until the job that made it ends
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.deepEqual(
      chunks.map((w) => w.deref() === undefined),
      chunks.map(() => true),
      'every chunk collected',
    );
    assert.ok(flat.messageCount > 0);
  });
});

/** Decodes a snapshot from chunks in buffers of their own (as a store reads them), watched by WeakRefs. */
function loadWatchingChunks(): { chunks: WeakRef<ArrayBuffer>[]; flat: FlatIndex } {
  const g = generate(12, 200, 3000);
  const enc = encodeSnapshot(prepareSnapshot(orgData(g)), 2);
  const own = [...enc.chunks].map((c) => Uint8Array.from(c));
  const manifest = parseManifest(enc.manifest(), { organizationId: g.contacts[0].organization_id, version: 2 });
  const decoder = new SnapshotDecoder(manifest, {}, 'serve');
  for (const [i, c] of own.entries()) decoder.add(i, c);
  return { chunks: own.map((c) => new WeakRef(c.buffer)), flat: decoder.finishFlat() };
}

backendCases(embeddedHarness());
backendCases(redisHarness());
backendCases(redisHarness(true));

for (const cluster of [false, true]) {
  describe(`redis store${cluster ? ' on a cluster' : ''}: versions a killed import abandoned`, () => {
    let redis: TestRedis | TestCluster;
    after(async () => {
      await redis?.stop();
    });

    test("a publish removes other organizations' abandoned versions, keeps those still being written", async () => {
      redis = cluster ? await startCluster() : await startRedis();
      const first = await RedisStore.connect(redis.url);
      const a = orgData(generate(21, 3, 30, 1));
      const served = await first.snapshots.publishSnapshot(a);
      const org = a.organizationId;
      const dead = spawnSync(process.execPath, ['-e', '0']).pid;
      const here = { hostname: hostname(), pidNamespace: pidNamespace() };
      // versions above the pointer, as a publisher leaves them between its first chunk and its switch
      const plant = async (version: number, writer: object | null) => {
        const key = `snap:{${org}}:v:${version}`;
        await first.client.zadd(`snap:{${org}}:versions`, version, String(version));
        await first.client.hset(key, '0', Buffer.alloc(1000, 7));
        if (writer) await first.client.hset(key, 'writer', JSON.stringify(writer));
        return key;
      };
      const v = served.version;
      const killed = await plant(v + 1, { ...here, pid: dead, at: Date.now() });
      const old = await plant(v + 2, {
        hostname: 'elsewhere',
        pidNamespace: null,
        pid: 1,
        at: Date.now() - 2 * 86400_000,
      });
      const live = await plant(v + 3, { ...here, pid: process.pid, at: Date.now() });
      const otherHost = await plant(v + 4, { hostname: 'elsewhere', pidNamespace: null, pid: dead, at: Date.now() });
      const unknown = await plant(v + 5, null);
      await first.close();
      // a later import, of another organization
      const later = await RedisStore.connect(redis.url);
      try {
        await later.snapshots.publishSnapshot(orgData(generate(22, 3, 30, 1)));
        const left = async (key: string) => (await later.client.exists(key)) === 1;
        assert.equal(await left(killed), false, "a dead writer's version on this host is removed");
        assert.equal(await left(old), false, 'a day-old one is removed, whatever its host');
        assert.equal(await left(live), true, "a live writer's version stays");
        assert.equal(await left(otherHost), true, "another host's recent one stays (its pid cannot be checked)");
        assert.equal(await left(unknown), true, 'one without a writer stays');
        const versions = (await later.client.zrange(`snap:{${org}}:versions`, '0', '-1')).map(Number);
        assert.deepEqual(versions, [v, v + 3, v + 4, v + 5]);
        assert.deepEqual((await later.snapshots.loadSnapshot(served)).messages.count, 30);
      } finally {
        await later.close();
      }
    });
  });
}

// A review, with a proxy that dropped the reply to the pointer switch: ioredis sent the switch
// again after reconnecting, which then found the pointer at its own version, took it for a newer
// publisher's, deleted the version the pointer named, and failed the import.
describe('redis store: a pointer switch sent twice', () => {
  let redis: TestRedis;
  after(async () => {
    await redis?.stop();
  });

  test('a commit whose switch already ran (its reply lost) succeeds and keeps its version', async () => {
    redis = await startRedis();
    const store = await RedisStore.connect(redis.url);
    try {
      const first = await store.snapshots.publishSnapshot(orgData(generate(23, 3, 30, 1)));
      const data = orgData(generate(23, 4, 40, 2));
      const staged = await store.snapshots.stageSnapshot(data);
      const ptr = `snap:{${data.organizationId}}:ptr`;
      // the first run of the switch, as Redis did it before the connection dropped
      await store.client.hset(ptr, 'version', String(staged.ref.version), 'previous', String(first.version));
      await staged.commit();
      const latest = (await store.snapshots.latest()).find((r) => r.organizationId === data.organizationId);
      assert.equal(latest?.version, staged.ref.version);
      assert.deepEqual(await store.snapshots.loadSnapshot(staged.ref), data);
      assert.equal((await store.snapshots.loadSnapshot(first)).messages.count, 30, 'the previous version is kept');
    } finally {
      await store.close();
    }
  });

  // A regression audit: a pointer of -3 had every version taken for newer than it, and the
  // import's sweep removed the organization's last good one (its writer gone).
  test("the sweep of abandoned versions leaves an unreadable pointer's organization alone", async () => {
    const first = await RedisStore.connect(redis.url);
    const a = orgData(generate(24, 3, 30, 1));
    const ref = await first.snapshots.publishSnapshot(a);
    await first.close();
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const key = `snap:{${a.organizationId}}:v:${ref.version}`;
    const admin = await RedisStore.connect(redis.url);
    try {
      await admin.client.hset(
        key,
        'writer',
        JSON.stringify({ hostname: hostname(), pidNamespace: pidNamespace(), pid: dead, at: Date.now() }),
      );
      await admin.client.hset(`snap:{${a.organizationId}}:ptr`, 'version', '-3');
    } finally {
      await admin.close();
    }
    const later = await RedisStore.connect(redis.url);
    try {
      await later.snapshots.publishSnapshot(orgData(generate(25, 3, 30, 1)));
      assert.equal(await later.client.exists(key), 1, 'the version stays until the pointer is repaired');
    } finally {
      await later.close();
    }
  });
});
