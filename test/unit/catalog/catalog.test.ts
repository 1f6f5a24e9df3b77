/** Catalog: loading, atomic swap, refused snapshots, polling, and `npm run reload` across processes with both stores. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Catalog, type CatalogLogger } from '../../../src/catalog/catalog.js';
import type { OrgIndex } from '../../../src/index/build.js';
import type { OrgData } from '../../../src/model/records.js';
import { EmbeddedStore, snapshotFile } from '../../../src/store/embedded-store.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { Stores } from '../../../src/store/stores.js';
import { startRedis, type TestRedis } from '../../helpers/redis-server.js';
import { generate, orgData, uuid } from '../../fixtures/gen-data.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

// buildIndex belongs to src/index; the Catalog only needs an object per organization.
// A stand-in carrying the counts these tests read keeps them independent of the index layout.
const fakeBuild = (d: OrgData): OrgIndex =>
  ({
    organizationId: d.organizationId,
    messageCount: d.messages.count,
    contactCount: d.contacts.length,
  }) as unknown as OrgIndex;

function memoryLogger(): CatalogLogger & { lines: { level: string; obj: object; msg?: string }[] } {
  const lines: { level: string; obj: object; msg?: string }[] = [];
  const at = (level: string) => (obj: object, msg?: string) => {
    lines.push({ level, obj, msg });
  };
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

function reloadCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/reload.ts', ...args],
      {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: '', DATA_DIR: '', ...env },
      },
      (err, stdout, stderr) => resolve({ code: err ? (err.code as number) : 0, stdout, stderr }),
    );
  });
}

// The admin listener's reload route, as the HTTP helper wires it: POST /admin/reload -> catalog.reload.
function adminServer(catalog: () => Catalog): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const u = new URL(req.url!, 'http://x');
    catalog()
      .reload(u.searchParams.get('organization_id'))
      .then(
        (s) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(s));
        },
        (e) => {
          res.writeHead(503);
          res.end(String(e.message));
        },
      );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
    ),
  );
}

describe('catalog, embedded store', () => {
  let dir: string, store: EmbeddedStore, catalog: Catalog, admin: { server: Server; url: string };
  const log = memoryLogger();
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'catalog-test-'));
    store = await new EmbeddedStore(dir).open();
    await store.snapshots.publishSnapshot(orgData(generate(1, 5, 100, 1)));
    await store.snapshots.publishSnapshot(orgData(generate(2, 5, 50, 1)));
    admin = await adminServer(() => catalog);
    catalog = new Catalog(store, { logger: log, adminUrl: admin.url, pollMs: 60_000, build: fakeBuild });
  });
  after(async () => {
    await catalog.stop();
    admin.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('start loads every organization, then ready', async () => {
    assert.equal(catalog.ready, false);
    await catalog.start();
    assert.equal(catalog.ready, true);
    assert.equal(catalog.get(uuid(1, 0))?.messageCount, 100);
    assert.equal(catalog.get(uuid(2, 0))?.messageCount, 50);
    assert.equal(catalog.get(uuid(3, 0)), null);
  });

  test('reload swaps in the new index; a held index is untouched', async () => {
    const held = catalog.get(uuid(1, 0));
    const ref = await store.snapshots.publishSnapshot(orgData(generate(1, 5, 120, 2)));
    const s = await catalog.reload();
    assert.deepEqual(s, {
      reloaded: [{ organization_id: uuid(1, 0), version: ref.version, messages: 120, contacts: 5 }],
      unchanged: 1,
      failed: [],
    });
    assert.equal(held?.messageCount, 100);
    assert.equal(catalog.get(uuid(1, 0))?.messageCount, 120);
  });

  test('a corrupt snapshot is refused and logged; the loaded one stays', async () => {
    const ref = await store.snapshots.publishSnapshot(orgData(generate(2, 5, 70, 2)));
    const file = snapshotFile(dir, ref);
    const b = readFileSync(file);
    b[30] ^= 1;
    writeFileSync(file, b);
    const s = await catalog.reload(uuid(2, 0));
    assert.equal(s.failed.length, 1);
    assert.equal(s.failed[0].version, ref.version);
    assert.match(s.failed[0].error, /checksum mismatch/);
    assert.equal(catalog.get(uuid(2, 0))?.messageCount, 50);
    const line = log.lines.find((l) => l.level === 'error')!;
    assert.deepEqual(
      [(line.obj as { organization_id: string }).organization_id, (line.obj as { version: number }).version],
      [uuid(2, 0), ref.version],
    );
    assert.equal(catalog.stats().loads.failed, 1);
  });

  test('npm run reload reaches the server through its admin URL', async () => {
    await store.snapshots.publishSnapshot(orgData(generate(3, 2, 10, 1)));
    const r = await reloadCli(['--organization-id', uuid(3, 0).toUpperCase()], { DATA_DIR: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /1 reloaded/);
    assert.equal(catalog.get(uuid(3, 0))?.messageCount, 10);
  });

  test('npm run reload fails (exit 1) when a server cannot load, naming it', async () => {
    const r = await reloadCli(['--organization-id', uuid(2, 0)], { DATA_DIR: dir });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`server ${catalog.serverId} .* did not reload: organization ${uuid(2, 0)} version \\d+: .*checksum`),
    );
  });

  test('with no server running, reload exits 0 and says so', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'catalog-empty-'));
    const r = await reloadCli([], { DATA_DIR: empty });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /no server is running/);
    rmSync(empty, { recursive: true, force: true });
  });

  test('bad usage exits 2', async () => {
    const r = await reloadCli(['--organization-id', 'nope'], { DATA_DIR: dir });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^reload: --organization-id must be a UUID, got "nope"/);
  });
});

describe('catalog, redis store', () => {
  let redis: TestRedis, store: Stores, catalog: Catalog, writer: Stores;
  const log = memoryLogger();
  before(async () => {
    redis = await startRedis();
    store = await RedisStore.connect(redis.url, { commandTimeoutMs: 1000 });
    writer = await RedisStore.connect(redis.url);
    await writer.snapshots.publishSnapshot(orgData(generate(1, 5, 100, 1)));
    catalog = new Catalog(store, { logger: log, pollMs: 300, build: fakeBuild });
    await catalog.start();
  });
  after(async () => {
    await catalog.stop();
    await store.close();
    await writer.close();
    await redis.stop();
  });

  test('the periodic check loads a new snapshot without a signal', async () => {
    await writer.snapshots.publishSnapshot(orgData(generate(1, 5, 101, 2)));
    const deadline = Date.now() + 3000;
    while (catalog.get(uuid(1, 0))?.messageCount !== 101) {
      assert.ok(Date.now() < deadline, 'not loaded within 3 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  test('npm run reload signals through pub/sub and waits for the ack', async () => {
    await writer.snapshots.publishSnapshot(orgData(generate(2, 3, 30, 1)));
    const r = await reloadCli(['--json'], { REDIS_URL: redis.url });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.ok, true);
    assert.deepEqual(
      out.servers.map((s: { id: string }) => s.id),
      [catalog.serverId],
    );
    assert.equal(catalog.get(uuid(2, 0))?.messageCount, 30);
  });

  test('Redis down: the server keeps serving, reload fails clearly, recovery after restart', async () => {
    await redis.kill();
    assert.equal(catalog.get(uuid(1, 0))?.messageCount, 101);
    await assert.rejects(catalog.reload(), /^Error: store: redis unavailable at redis:\/\/127\.0\.0\.1:\d+: /);
    const r = await reloadCli([], { REDIS_URL: redis.url });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^reload: store: redis unavailable at /);
    assert.equal(catalog.get(uuid(1, 0))?.messageCount, 101);
    await redis.restart();
    // Data is gone with the restarted (non-persistent) server: publish again, reload must work.
    const deadline = Date.now() + 5000;
    for (;;) {
      try {
        await writer.snapshots.publishSnapshot(orgData(generate(1, 5, 102, 3)));
        break;
      } catch (err) {
        assert.ok(Date.now() < deadline, String(err));
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    while (catalog.get(uuid(1, 0))?.messageCount !== 102) {
      assert.ok(Date.now() < deadline + 5000, 'not reloaded after Redis came back');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});

describe('catalog, embedded store: the poll lists pointers only when something was published', () => {
  test('an unchanged change token skips the listing; a publish is loaded at the next poll', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'catalog-poll-'));
    const store = await new EmbeddedStore(dir).open();
    await store.snapshots.publishSnapshot(orgData(generate(1, 5, 100, 1)));
    let listings = 0;
    const snapshots = store.snapshots;
    const counting = Object.create(snapshots) as typeof snapshots;
    counting.listLatest = () => {
      listings++;
      return snapshots.listLatest();
    };
    const catalog = new Catalog(
      { ...store, snapshots: counting, fleet: store.fleet, currentRedisUrl: () => null },
      { logger: memoryLogger(), pollMs: 50, build: fakeBuild },
    );
    try {
      await catalog.start();
      const afterStart = listings;
      await new Promise((r) => setTimeout(r, 400));
      // eight polls or so, none listed: 10,000 pointers took 0.9 s of CPU a listing, every second;
      // the start's listing counts as theirs (the first poll listed again, right at ready)
      assert.equal(afterStart, 1, "the start's listing");
      assert.equal(listings, afterStart, 'none while nothing changes');
      const org = orgData(generate(1, 5, 120, 2));
      await store.snapshots.publishSnapshot(org);
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(listings, afterStart + 1, 'the publish changed the token: listed once more');
      assert.equal(catalog.get(org.organizationId)?.messageCount, org.messages.count, 'and loaded');
    } finally {
      await catalog.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
