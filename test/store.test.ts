/**
 * One suite, run against both stores (hono's shared router cases): what one store does, the other
 * must do too. The Redis run uses a real redis-server on a free port.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { Unpackr } from 'msgpackr';
import { EmbeddedStore, snapshotFile } from '../src/store/embedded-store.js';
import { RedisStore } from '../src/store/redis-store.js';
import {
  CHUNK_MAX,
  encodeManifest,
  encodeSnapshot,
  prepareSnapshot,
  type Manifest,
} from '../src/store/snapshot-format.js';
import type { KeyRecord, SnapshotRef, Store } from '../src/store/store.js';
import { startCluster, type TestCluster } from './helpers/redis-cluster.js';
import { startRedis, type TestRedis } from './helpers/redis-server.js';
import { generate, orgData, uuid } from './fixtures/gen-data.js';

interface Harness {
  name: string;
  open(): Promise<Store>;
  /** Flips one byte of the first chunk of `ref`. */
  corruptChunk(store: Store, ref: SnapshotRef): Promise<void>;
  /** Rewrites the manifest of `ref` with another format version, or as `format` maps it (and a valid checksum). */
  setFormat(store: Store, ref: SnapshotRef, format: number | ((m: Manifest) => Manifest)): Promise<void>;
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
      if (cluster) assert.ok(store.client instanceof Cluster, 'REDIS_URL naming one node is detected as a cluster');
      return store;
    },
    async corruptChunk(s, ref) {
      const rs = s as RedisStore;
      const b = (await rs.client.hgetBuffer(rs.versionKeyOf(ref), '0'))!;
      b[20] ^= 0xff;
      await rs.client.hset(rs.versionKeyOf(ref), '0', b);
    },
    async setFormat(s, ref, format) {
      const rs = s as RedisStore;
      const b = (await rs.client.hgetBuffer(rs.versionKeyOf(ref), 'manifest'))!;
      await rs.client.hset(rs.versionKeyOf(ref), 'manifest', Buffer.from(reformat(b, format)));
    },
    async cleanup() {
      await redis?.stop();
    },
  };
}

function key(prefix: string, org: string): KeyRecord {
  return {
    prefix,
    name: `key ${prefix}`,
    hash: 'ab'.repeat(32),
    organization_ids: [org],
    scopes: ['contacts:read', 'messages:read'],
    created_at: '2024-01-01T00:00:00.000Z',
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
  };
}

function storeCases(h: Harness): void {
  describe(h.name, () => {
    let store: Store;
    before(async () => {
      store = await h.open();
    });
    after(async () => {
      await store?.close();
      await h.cleanup();
    });

    test('publish then load round-trips exactly, over several chunks', async () => {
      const g = generate(1, 40, 3000);
      // ~12 MB of content: several chunks.
      g.messages.forEach((m, i) => {
        if (i % 3 === 0) m.content = `${m.content} ${'ação '.repeat(1000)}`;
      });
      const data = orgData(g);
      const ref = await store.publishSnapshot(data);
      assert.equal(ref.organizationId, uuid(1, 0));
      assert.deepEqual(await store.loadSnapshot(ref), data);
    });

    test('an organization with contacts and no messages round-trips', async () => {
      const data = orgData(generate(2, 3, 0));
      assert.deepEqual(await store.loadSnapshot(await store.publishSnapshot(data)), data);
    });

    test('latest names the newest version; a re-publish replaces one organization only', async () => {
      const a1 = await store.publishSnapshot(orgData(generate(3, 5, 50, 1)));
      const b1 = await store.publishSnapshot(orgData(generate(4, 5, 50, 1)));
      const a2data = orgData(generate(3, 6, 70, 2));
      const a2 = await store.publishSnapshot(a2data);
      assert.ok(a2.version > a1.version);
      const latest = new Map((await store.latest()).map((r) => [r.organizationId, r.version]));
      assert.equal(latest.get(uuid(3, 0)), a2.version);
      assert.equal(latest.get(uuid(4, 0)), b1.version);
      assert.deepEqual(await store.loadSnapshot(a2), a2data);
      assert.equal((await store.loadSnapshot(b1)).messages.count, 50);
    });

    test('keeps the previous version, removes older ones', async () => {
      const refs = [];
      for (let s = 1; s <= 4; s++) refs.push(await store.publishSnapshot(orgData(generate(5, 3, 10, s))));
      await store.loadSnapshot(refs[2]);
      await assert.rejects(store.loadSnapshot(refs[1]), /^Error: store: /);
    });

    test('a corrupted chunk is refused; the previous version stays loadable', async () => {
      const old = await store.publishSnapshot(orgData(generate(6, 5, 200, 1)));
      const bad = await store.publishSnapshot(orgData(generate(6, 5, 200, 2)));
      await h.corruptChunk(store, bad);
      await assert.rejects(store.loadSnapshot(bad), (err: Error) =>
        /^snapshot: corrupt snapshot of organization .* version \d+: chunk 0 checksum mismatch$/.test(err.message),
      );
      assert.equal((await store.loadSnapshot(old)).messages.count, 200);
    });

    test('an unknown format version is refused, naming version and organization', async () => {
      const ref = await store.publishSnapshot(orgData(generate(7, 2, 5)));
      await h.setFormat(store, ref, 7);
      await assert.rejects(store.loadSnapshot(ref), {
        message: `snapshot: unknown format version 7 for organization ${uuid(7, 0)}`,
      });
      await assert.rejects(store.loadFlatIndex(ref), {
        message: `snapshot: unknown format version 7 for organization ${uuid(7, 0)}`,
      });
    });

    test('an older format-1 snapshot (record columns) still loads: its index is built on load', async () => {
      const data = orgData(generate(11, 6, 300, 1));
      const ref = await store.publishSnapshot(data, { format: 1 });
      assert.deepEqual(await store.loadSnapshot(ref), data);
      const v1 = await store.loadFlatIndex(ref);
      const v2 = await store.loadFlatIndex(await store.publishSnapshot(data));
      assert.equal(v1.messageCount, 300);
      assert.deepEqual(Object.keys(v1.sections).sort(), Object.keys(v2.sections).sort());
      for (const [k, a] of Object.entries(v2.sections)) {
        assert.ok(v1.sections[k].buffer instanceof SharedArrayBuffer && a.buffer instanceof SharedArrayBuffer, k);
        assert.deepEqual([...v1.sections[k]], [...a], `section ${k}`);
      }
      assert.deepEqual(v1.contacts, v2.contacts);
    });

    test('a format-2 snapshot of another index layout is refused, naming the organization, version and command', async () => {
      const old = await store.publishSnapshot(orgData(generate(12, 3, 40, 1)));
      const ref = await store.publishSnapshot(orgData(generate(12, 3, 40, 2)));
      await h.setFormat(store, ref, (m) => ({ ...m, sections: m.sections!.filter(([name]) => name !== 'postings') }));
      const refused = {
        message: `snapshot: organization ${uuid(12, 0)} version ${ref.version} has no section postings (another index layout); publish it again with \`npm run snapshot -- import\``,
      };
      await assert.rejects(store.loadFlatIndex(ref), refused);
      await h.setFormat(store, ref, (m) => ({
        ...m,
        sections: m.sections!.map(([n, t, l]) => (n === 'entryStart' ? [n, 'Float64Array', l] : [n, t, l])),
      }));
      await assert.rejects(store.loadFlatIndex(ref), /a differently typed section entryStart \(another index layout\)/);
      assert.equal((await store.loadFlatIndex(old)).messageCount, 40);
    });

    test('a truncated chunk is refused with organization and version', async () => {
      const ref = await store.publishSnapshot(orgData(generate(13, 3, 40, 1)));
      await h.setFormat(store, ref, (m) => ({ ...m, chunks: m.chunks.map((c) => ({ ...c, length: c.length + 10 })) }));
      await assert.rejects(
        store.loadFlatIndex(ref),
        new RegExp(`^Error: snapshot: .*organization ${uuid(13, 0)} version ${ref.version}`),
      );
    });

    test('refuses an organization id that is not a lower-case UUID', async () => {
      const data = orgData(generate(8, 1, 1));
      data.organizationId = '../../etc';
      await assert.rejects(store.publishSnapshot(data), /^Error: store: organization id must be a lower-case UUID/);
    });

    test('keys: put, get, list, revoke, touch', async () => {
      const org = uuid(9, 0);
      await store.putKey(key('abcd1234', org));
      await store.putKey(key('wxyz0000', org));
      assert.deepEqual(await store.getKey('abcd1234'), key('abcd1234', org));
      assert.equal(await store.getKey('nope0000'), null);
      assert.deepEqual((await store.listKeys()).map((k) => k.prefix).sort(), ['abcd1234', 'wxyz0000']);
      assert.equal(await store.revokeKey('abcd1234', '2024-02-02T00:00:00.000Z'), true);
      assert.equal(await store.revokeKey('nope0000', '2024-02-02T00:00:00.000Z'), false);
      await store.touchKeys(new Map([['abcd1234', '2024-03-03T00:00:00.000Z']]));
      const k = await store.getKey('abcd1234');
      assert.equal(k?.revoked_at, '2024-02-02T00:00:00.000Z');
      assert.equal(k?.last_used_at, '2024-03-03T00:00:00.000Z');
    });

    test('servers: register, list, expire, unregister', async () => {
      const entry = {
        id: 'test-1',
        pid: process.pid,
        hostname: 'h',
        adminUrl: null,
        startedAt: 'now',
        heartbeatAt: Date.now(),
      };
      await store.registerServer(entry, 300);
      await store.registerServer({ ...entry, id: 'test-2' }, 10_000);
      assert.deepEqual((await store.listServers()).map((s) => s.id).sort(), ['test-1', 'test-2']);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        (await store.listServers()).map((s) => s.id),
        ['test-2'],
      );
      await store.unregisterServer('test-2');
      assert.deepEqual(await store.listServers(), []);
    });
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
});

storeCases(embeddedHarness());
storeCases(redisHarness());
storeCases(redisHarness(true));
