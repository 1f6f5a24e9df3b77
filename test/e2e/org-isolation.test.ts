/**
 * Issue 13, from outside, on both stores: organizations fail alone. Three organizations; one of
 * them gets a corrupt pointer, a corrupt chunk or a missing version, at start and at reload. The
 * others keep being served (whole bodies equal the reference), the damaged one answers from its
 * older version in memory or 503 `unavailable` with Retry-After, /readyz lists it, it recovers
 * without a restart, and the server never writes to the snapshots. Also: the store down at start
 * (Redis stopped, DATA_DIR unusable) and back; a key created with the CLI works on its first request.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateDataset, mulberry32 } from '../../scripts/gen-lib.js';
import { OrgDataBuilder } from '../../src/model/org-data-builder.js';
import type { Contact, MessageLine, OrgData } from '../../src/model/records.js';
import { snapshotFile } from '../../src/store/embedded-store.js';
import { loadStoreConfig } from '../../src/config/config.js';
import { openStores } from '../../src/store/open-store.js';
import type { RedisStore } from '../../src/store/redis-store.js';
import type { SnapshotRef } from '../../src/store/snapshot-store.js';
import type { Stores } from '../../src/store/stores.js';
import { parseRfc3339 } from '../../src/time/rfc3339.js';
import {
  assertBody,
  expected,
  generateRequest,
  importCli,
  openHarness,
  reloadCli,
  search,
  tempDir,
  vocabulary,
  waitFor,
  writeDataset,
  type GeneratedRequest,
  type StoreHarness,
} from '../helpers/e2e.js';
import { startRedis } from '../helpers/redis-server.js';
import {
  baseEnv,
  createKey,
  freshGet,
  keysCli,
  startServer,
  type CreatedKey,
  type RunningServer,
} from '../helpers/server.js';

const SEED = 1313;
// message and conversation ids in UUID form, as CRMs export them (the index packs message ids)
const data = generateDataset({ messages: 3000, contacts: 90, organizations: 3, seed: SEED, ids: 'uuid' });
const ORGS = [...new Set(data.contacts.map((c) => c.organization_id))].sort();
const [A, B, C] = ORGS;
const work = tempDir('isolation-');
const files = writeDataset(work.dir, data.contacts, data.messages);
after(() => work.cleanup());

const probes = new Map<string, GeneratedRequest[]>();
{
  const rng = mulberry32(SEED);
  for (const org of ORGS) {
    const v = vocabulary(data.messages, org);
    probes.set(
      org,
      Array.from({ length: 3 }, () => generateRequest(rng, org, v)),
    );
  }
}

function orgData(org: string): OrgData {
  const b = new OrgDataBuilder(org);
  for (const c of data.contacts as Contact[]) if (c.organization_id === org) b.addContact(c);
  for (const m of data.messages as MessageLine[])
    if (m.organization_id === org) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return b.build();
}

/** Every probe of `org` answers 200 with exactly the reference's body. */
async function assertServed(server: RunningServer, key: string, org: string, what: string): Promise<void> {
  for (const p of probes.get(org)!) {
    const r = await search(server.url, key, p.query);
    assert.equal(r.status, 200, `${what}: ${org}: ${r.text}`);
    assertBody(r.text, expected(data, p.request), `${what}: ${org} ?${p.query}`);
  }
}

const FAILED_MESSAGE = 'The data of this organization failed to load; retry after the time in Retry-After.';

/** A search of `org` answers 503 `unavailable` with Retry-After, the CONTRACT 5 body. */
async function assertUnavailable(
  server: RunningServer,
  key: string,
  org: string,
  message = FAILED_MESSAGE,
): Promise<void> {
  const res = await fetch(`${server.url}/contacts/message-search?${probes.get(org)![0].query}`, {
    headers: { authorization: `Bearer ${key}`, 'x-request-id': 'unavail-1' },
  });
  assert.equal(res.status, 503, await res.clone().text());
  const retry = res.headers.get('retry-after');
  assert.match(retry ?? '', /^[1-9]\d*$/, 'Retry-After in whole seconds');
  assert.ok(Number(retry) <= 30, `Retry-After at most the 30 s backoff cap, got ${retry}`);
  assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.deepEqual(await res.json(), { error: 'unavailable', message, request_id: 'unavail-1' });
}

interface Readyz {
  status: string;
  failed_organizations: {
    organization_id: string;
    version: number | null;
    error: string;
    serving_version: number | null;
    attempts: number;
  }[];
}

async function readyz(server: RunningServer): Promise<{ status: number; body: Readyz }> {
  const r = await fetch(`${server.adminUrl}/readyz`);
  return { status: r.status, body: (await r.json()) as Readyz };
}

async function adminReload(
  server: RunningServer,
  org?: string,
): Promise<{
  status: number;
  body: {
    reloaded: { organization_id: string; version: number }[];
    unchanged: number;
    failed: { organization_id: string; version: number | null; error: string }[];
  };
}> {
  const r = await fetch(`${server.adminUrl}/admin/reload${org ? `?organization_id=${org}` : ''}`, { method: 'POST' });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text) };
}

/** Digest of everything stored under snapshots (files, or Redis `snap:*` keys): the server must never change it. */
async function storedState(h: StoreHarness, store: Stores): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  if (h.name === 'embedded') {
    const root = path.join(h.serverEnv.DATA_DIR, 'snapshots');
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        if (name.startsWith('.')) continue; // locks and temp files of a publisher
        const p = path.join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else out.set(path.relative(root, p), sha(readFileSync(p)));
      }
    };
    walk(root);
    return out;
  }
  const r = (store as RedisStore).client;
  for (const key of (await r.keys('snap:*')).sort()) {
    // the publishers' change counter (like the embedded store's .changed, skipped above)
    if (key === 'snap:changes') continue;
    const type = await r.type(key);
    if (type === 'hash') {
      const all = await r.hgetallBuffer(key);
      out.set(
        key,
        sha(
          Buffer.concat(
            Object.keys(all)
              .sort()
              .flatMap((f) => [Buffer.from(f), all[f]]),
          ),
        ),
      );
    } else if (type === 'string') out.set(key, sha((await r.getBuffer(key))!));
    else if (type === 'set') out.set(key, sha((await r.smembers(key)).sort().join(',')));
    else if (type === 'zset') out.set(key, sha((await r.zrange(key, '0', '-1', 'WITHSCORES')).join(',')));
    else out.set(key, type);
  }
  return out;
}

interface Damage {
  name: string;
  /** damages `ref` (the organization's current version); returns the repair */
  apply(ref: SnapshotRef): Promise<() => Promise<void>>;
  /** the failure's version as reported: null when the pointer itself is unreadable */
  reportsVersion: boolean;
  error: RegExp;
}

function damages(h: StoreHarness, store: Stores): Damage[] {
  if (h.name === 'embedded') {
    const dir = h.serverEnv.DATA_DIR;
    return [
      {
        name: 'a corrupt pointer',
        reportsVersion: false,
        error: /^store: unreadable pointer of organization [0-9a-f-]{36}: /,
        async apply(ref) {
          const file = path.join(dir, 'snapshots', ref.organizationId, 'CURRENT');
          const before = readFileSync(file);
          writeFileSync(file, '{"version":');
          return async () => writeFileSync(file, before);
        },
      },
      {
        name: 'a corrupt chunk',
        reportsVersion: true,
        error: /checksum mismatch/,
        async apply(ref) {
          const file = snapshotFile(dir, ref);
          const before = readFileSync(file);
          const b = Buffer.from(before);
          b[100] ^= 0x20;
          writeFileSync(file, b);
          return async () => writeFileSync(file, before);
        },
      },
      {
        name: 'a missing version',
        reportsVersion: true,
        error: /ENOENT/,
        async apply(ref) {
          const file = snapshotFile(dir, ref);
          // Moved outside snapshots/, so the stored-state digest sees it gone, then back.
          const away = path.join(dir, `away-${ref.version}`);
          renameSync(file, away);
          return async () => renameSync(away, file);
        },
      },
    ];
  }
  const r = (store as RedisStore).client;
  return [
    {
      name: 'a corrupt pointer',
      reportsVersion: false,
      error: /^store: unreadable pointer of organization [0-9a-f-]{36}: bad version/,
      async apply(ref) {
        const key = `snap:{${ref.organizationId}}:ptr`;
        const before = await r.hget(key, 'version');
        await r.hset(key, 'version', '{"version":');
        return async () => {
          await r.hset(key, 'version', before!);
        };
      },
    },
    {
      name: 'a corrupt chunk',
      reportsVersion: true,
      error: /checksum mismatch/,
      async apply(ref) {
        const key = (store as RedisStore).snapshots.versionKeyOf(ref);
        const before = (await r.hgetBuffer(key, '0'))!;
        const b = Buffer.from(before);
        b[100] ^= 0x20;
        await r.hset(key, '0', b);
        return async () => {
          await r.hset(key, '0', before);
        };
      },
    },
    {
      name: 'a missing version',
      reportsVersion: true,
      error: /^store: no snapshot version \d+ of organization /,
      async apply(ref) {
        const key = (store as RedisStore).snapshots.versionKeyOf(ref);
        await r.rename(key, `away:${ref.version}`);
        return async () => {
          await r.rename(`away:${ref.version}`, key);
        };
      },
    },
  ];
}

async function currentRef(store: Stores, org: string): Promise<SnapshotRef> {
  const ref = (await store.snapshots.listLatest()).refs.find((x) => x.organizationId === org);
  assert.ok(ref, `organization ${org} has a readable pointer`);
  return ref;
}

for (const storeName of ['embedded', 'redis'] as const) {
  describe(`organizations fail alone, ${storeName} store`, () => {
    let h: StoreHarness, store: Stores, all: CreatedKey, onlyA: CreatedKey;
    before(async () => {
      h = await openHarness(storeName);
      const imp = await importCli(h.env, files);
      assert.equal(imp.code, 0, imp.stderr);
      store = await openStores(loadStoreConfig(h.env));
      all = await createKey(h.env, ORGS, 'contacts:read,messages:read');
      onlyA = await createKey(h.env, [A], 'contacts:read,messages:read');
    });
    after(async () => {
      await store?.close();
      await h?.cleanup();
    });

    test('the reproduction of the issue, step by step', async () => {
      const pointerDamage = damages(h, store)[0];
      let server = await startServer(h.serverEnv);
      try {
        for (const org of ORGS) await assertServed(server, all.key, org, 'healthy start');
        const servedC = await currentRef(store, C);
        // 1. C's pointer is corrupt (the caller's key covers A only).
        const repair = await pointerDamage.apply(servedC);
        let stored = await storedState(h, store);
        // 2. Reloading another organization works, and so does a reload of all: C alone fails.
        let rel = await adminReload(server, A);
        assert.deepEqual(rel, { status: 200, body: { reloaded: [], unchanged: 1, failed: [] } });
        rel = await adminReload(server);
        assert.equal(rel.status, 200);
        assert.deepEqual(rel.body.reloaded, []);
        assert.equal(rel.body.unchanged, 2);
        assert.deepEqual(
          rel.body.failed.map((f) => [f.organization_id, f.version]),
          [[C, null]],
        );
        assert.match(rel.body.failed[0].error, pointerDamage.error);
        // C keeps serving its version in memory; /readyz names it.
        await assertServed(server, onlyA.key, A, 'C pointer corrupt');
        await assertServed(server, all.key, C, 'C pointer corrupt, served from memory');
        let rz = await readyz(server);
        assert.equal(rz.status, 200);
        assert.deepEqual(
          rz.body.failed_organizations.map((f) => [f.organization_id, f.version, f.serving_version]),
          [[C, null, servedC.version]],
        );
        // The once-a-second check goes on for the others: a new snapshot of B is picked up alone.
        const newB = await store.snapshots.publishSnapshot(orgData(B));
        await waitFor('the poll to load B despite C', 5000, async () =>
          (await fetch(`${server.adminUrl}/metrics`).then((r) => r.text())).includes(
            `index_snapshot_version{organization_id="${B}"} ${newB.version}`,
          ),
        );
        await assertServed(server, all.key, B, 'B reloaded by the poll');
        // Only B's publish changed the store; the server itself wrote nothing.
        const notB = (m: Map<string, string>) => new Map([...m].filter(([k]) => !k.includes(B)));
        const now = await storedState(h, store);
        assert.deepEqual(notB(now), notB(stored));
        stored = now;
        // 3. Restart: every organization but C serves; C answers 503 with Retry-After.
        await server.stop();
        server = await startServer(h.serverEnv);
        rz = await readyz(server);
        assert.equal(rz.status, 200);
        assert.deepEqual(
          rz.body.failed_organizations.map((f) => [f.organization_id, f.version, f.serving_version]),
          [[C, null, null]],
        );
        assert.match(rz.body.failed_organizations[0].error, pointerDamage.error);
        await assertServed(server, onlyA.key, A, 'after restart');
        await assertServed(server, all.key, B, 'after restart');
        await assertUnavailable(server, all.key, C);
        // `npm run reload` sees this server (heartbeat registered); C still failing: exit 1, naming it.
        const cli = await reloadCli(h.env);
        assert.equal(cli.code, 1, cli.stdout + cli.stderr);
        assert.match(cli.stderr, new RegExp(`did not reload: organization ${C}: store: unreadable pointer`));
        assert.deepEqual(await storedState(h, store), stored, 'the server changed nothing stored');
        // 4. Repair and reload: C served again, /readyz clean, no restart.
        await repair();
        rel = await adminReload(server);
        assert.equal(rel.status, 200);
        // C failed at this start, so the backoff retry (1 s, 2 s, 4 s ...) polls it too: one that
        // lands between the repair and this reload loads C first, and the reload finds it unchanged
        // (seen once in CI). Either way C is reloaded once, and nothing fails.
        const reloaded = rel.body.reloaded.map((x) => [x.organization_id, x.version]);
        if (reloaded.length === 0) assert.equal(rel.body.unchanged, 3, JSON.stringify(rel.body));
        else assert.deepEqual(reloaded, [[C, servedC.version]]);
        assert.deepEqual(rel.body.failed, []);
        rz = await readyz(server);
        assert.deepEqual(rz, { status: 200, body: { status: 'ready', failed_organizations: [] } });
        for (const org of ORGS) await assertServed(server, all.key, org, 'after repair');
        const ok = await reloadCli(h.env);
        assert.equal(ok.code, 0, ok.stderr);
        assert.match(ok.stdout, /0 reloaded, 3 unchanged/);
        const metrics = await (await fetch(`${server.adminUrl}/metrics`)).text();
        assert.match(
          metrics,
          new RegExp(`catalog_organization_snapshot_loads_total\\{organization_id="${C}",result="failed"\\} [1-9]`),
        );
        assert.match(
          metrics,
          new RegExp(`catalog_organization_snapshot_loads_total\\{organization_id="${C}",result="ok"\\} 1`),
        );
        assert.doesNotMatch(metrics, /catalog_organization_failing\{/);
      } finally {
        await server.stop();
      }
    });

    for (let i = 0; i < 3; i++) {
      test(`damage ${i + 1} of 3 at reload: the others and C's older version keep serving`, async () => {
        const damage = damages(h, store)[i];
        const server = await startServer(h.serverEnv);
        try {
          const old = await currentRef(store, C);
          // A new version of C (same records, so same answers), then damaged.
          const ref = damage.reportsVersion ? await store.snapshots.publishSnapshot(orgData(C)) : old;
          const repair = await damage.apply(ref);
          const stored = await storedState(h, store);
          const rel = await adminReload(server);
          assert.equal(rel.status, 200, `${damage.name}: ${JSON.stringify(rel.body)}`);
          assert.deepEqual(rel.body.reloaded, []);
          assert.equal(rel.body.unchanged, 2);
          assert.deepEqual(
            rel.body.failed.map((f) => [f.organization_id, f.version]),
            [[C, damage.reportsVersion ? ref.version : null]],
          );
          assert.match(rel.body.failed[0].error, damage.error);
          for (const org of ORGS) await assertServed(server, all.key, org, `${damage.name} at reload`);
          const rz = await readyz(server);
          assert.equal(rz.status, 200);
          assert.deepEqual(
            rz.body.failed_organizations.map((f) => [f.organization_id, f.serving_version]),
            [[C, old.version]],
          );
          assert.deepEqual(await storedState(h, store), stored, `${damage.name}: the server changed nothing stored`);
          const failing = new RegExp(`catalog_organization_failing\\{organization_id="${C}"\\} 1`);
          assert.match(await (await fetch(`${server.adminUrl}/metrics`)).text(), failing);
          await repair();
          const again = await adminReload(server, C);
          assert.equal(again.status, 200);
          assert.deepEqual(again.body.failed, []);
          assert.deepEqual((await readyz(server)).body.failed_organizations, []);
          // a recovery without a load (the pointer names the version in memory again) is printed
          // too: the series were printed again only when a load counted (a code review)
          assert.doesNotMatch(await (await fetch(`${server.adminUrl}/metrics`)).text(), failing);
          for (const org of ORGS) await assertServed(server, all.key, org, `${damage.name} repaired`);
        } finally {
          await server.stop();
        }
      });

      test(`damage ${i + 1} of 3 at start: C answers 503 until repaired, then the retry serves it without a restart`, async () => {
        const damage = damages(h, store)[i];
        const ref = await currentRef(store, C);
        const repair = await damage.apply(ref);
        const stored = await storedState(h, store);
        const server = await startServer(h.serverEnv);
        try {
          const rz = await readyz(server);
          assert.equal(rz.status, 200);
          assert.deepEqual(
            rz.body.failed_organizations.map((f) => [f.organization_id, f.version, f.serving_version]),
            [[C, damage.reportsVersion ? ref.version : null, null]],
          );
          assert.match(rz.body.failed_organizations[0].error, damage.error);
          await assertServed(server, onlyA.key, A, `${damage.name} at start`);
          await assertServed(server, all.key, B, `${damage.name} at start`);
          await assertUnavailable(server, all.key, C);
          // The key lacks C: 403 comes first, as ever (CONTRACT 5).
          assert.equal((await search(server.url, onlyA.key, probes.get(C)![0].query)).status, 403);
          assert.deepEqual(await storedState(h, store), stored, `${damage.name}: the server changed nothing stored`);
          await repair();
          // No reload: the backoff retry (1 s, 2 s, 4 s ...) picks it up.
          await waitFor(
            'C to be served after the repair',
            20_000,
            async () => (await search(server.url, all.key, probes.get(C)![0].query)).status === 200,
          );
          for (const org of ORGS) await assertServed(server, all.key, org, `${damage.name} repaired`);
          assert.deepEqual((await readyz(server)).body.failed_organizations, []);
          assert.match(server.output(), /catalog: organization recovered/);
        } finally {
          await server.stop();
        }
      });
    }

    test('a key created with the CLI works on its very first request; revocation within 2 s', async () => {
      const server = await startServer(h.serverEnv);
      try {
        for (let i = 0; i < 3; i++) {
          const fresh = await createKey(h.env, [A], 'contacts:read,messages:read');
          // Concurrent first requests share one lookup; every one is a 200.
          const rs = await Promise.all(probes.get(A)!.map((p) => search(server.url, fresh.key, p.query)));
          rs.forEach((r, j) => {
            assert.equal(r.status, 200, r.text);
            assertBody(r.text, expected(data, probes.get(A)![j].request), 'fresh key');
          });
          if (i === 2) {
            const rv = await keysCli(['revoke', fresh.prefix], h.env);
            assert.equal(rv.code, 0, rv.stderr);
            const t0 = Date.now();
            await waitFor(
              'the revocation',
              2000,
              async () => (await search(server.url, fresh.key, probes.get(A)![0].query)).status === 401,
            );
            assert.ok(Date.now() - t0 <= 2000);
          }
        }
        // Random unknown prefixes: 401 with the contract body, however many.
        const bogus = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            search(server.url, `crm_live_${String(i).padStart(8, 'z')}_${'A'.repeat(32)}`, probes.get(A)![0].query),
          ),
        );
        for (const r of bogus) {
          assert.equal(r.status, 401);
          assert.deepEqual(Object.keys(JSON.parse(r.text)), ['error', 'message', 'request_id']);
        }
      } finally {
        await server.stop();
      }
    });
  });
}

describe('random prefixes cannot flood the store (redis, counted by Redis itself)', () => {
  test('300 unknown prefixes cost at most the lookup rate of store reads', async () => {
    const h = await openHarness('redis');
    const store = await openStores(loadStoreConfig(h.env));
    const server = await startServer(h.serverEnv);
    try {
      const r = (store as RedisStore).client;
      const gets = async () => Number(/cmdstat_get:calls=(\d+)/.exec(await r.info('commandstats'))?.[1] ?? 0);
      const before = await gets();
      const t0 = Date.now();
      const res = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          search(
            server.url,
            `crm_live_${i.toString(36).padStart(8, 'q')}_${'B'.repeat(32)}`,
            `organization_id=${A}&q=x`,
          ),
        ),
      );
      const seconds = (Date.now() - t0) / 1000;
      assert.ok(res.every((x) => x.status === 401));
      const reads = (await gets()) - before;
      // 20 a second with a burst of 20 (the key refresh uses MGET, not GET).
      assert.ok(reads <= 20 + Math.ceil(seconds * 20) + 2, `${reads} GETs in ${seconds} s`);
    } finally {
      await server.stop();
      await store.close();
      await h.cleanup();
    }
  });
});

describe('the store down at start, then back', () => {
  test('redis: listens, 503 with Retry-After, ready when Redis returns, no restart; npm run reload sees it', async () => {
    const redis = await startRedis({ persist: true });
    const d = tempDir('down-redis-');
    const env = baseEnv({ REDIS_URL: redis.url, DATA_DIR: d.dir });
    let server: RunningServer | null = null;
    try {
      assert.equal((await importCli(env, files)).code, 0);
      const key = await createKey(env, ORGS, 'contacts:read,messages:read');
      const check = await openStores(loadStoreConfig(env));
      const stored = await storedState({ name: 'redis' } as StoreHarness, check);
      await check.close();
      await redis.kill();
      server = await startServer({ REDIS_URL: redis.url, DATA_DIR: d.dir }, { waitReady: false });
      await waitFor('the server to listen', 15_000, async () =>
        fetch(`${server!.adminUrl}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        ),
      );
      await assertDown(server, key.key);
      await redis.restart();
      await waitFor(
        'ready after Redis came back',
        20_000,
        async () => (await fetch(`${server!.adminUrl}/readyz`)).status === 200,
      );
      assert.deepEqual(await readyz(server), { status: 200, body: { status: 'ready', failed_organizations: [] } });
      for (const org of ORGS) await assertServed(server, key.key, org, 'after Redis came back');
      await waitFor('the server to register', 10_000, async () => {
        const cli = await reloadCli(env, ['--json']);
        return cli.code === 0 && (JSON.parse(cli.stdout) as { servers: unknown[] }).servers.length === 1;
      });
      const check2 = await openStores(loadStoreConfig(env));
      assert.deepEqual(await storedState({ name: 'redis' } as StoreHarness, check2), stored);
      await check2.close();
      assert.match(server.output(), /store: unavailable at start; serving 503 and retrying/);
    } finally {
      await server?.stop();
      await redis.stop();
      d.cleanup();
    }
  });

  test('embedded: DATA_DIR unreachable at start (a symlink to a volume not mounted yet), then there: ready without a restart', async () => {
    const d = tempDir('down-embedded-');
    const dataDir = path.join(d.dir, 'data');
    const env = baseEnv({ DATA_DIR: dataDir });
    let server: RunningServer | null = null;
    try {
      assert.equal((await importCli(env, files)).code, 0);
      const key = await createKey(env, ORGS, 'contacts:read,messages:read');
      const harness = { name: 'embedded', serverEnv: { DATA_DIR: dataDir } } as unknown as StoreHarness;
      const stored = await storedState(harness, null as unknown as Stores);
      // DATA_DIR a symlink to where the volume will be (a file there instead fails the start:
      // config.test.ts)
      const volume = `${dataDir}.volume`;
      renameSync(dataDir, `${dataDir}.away`);
      symlinkSync(volume, dataDir);
      server = await startServer({ DATA_DIR: dataDir }, { waitReady: false });
      await waitFor('the server to listen', 15_000, async () =>
        fetch(`${server!.adminUrl}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        ),
      );
      await assertDown(server, key.key);
      renameSync(`${dataDir}.away`, volume);
      await waitFor(
        'ready after DATA_DIR came back',
        20_000,
        async () => (await fetch(`${server!.adminUrl}/readyz`)).status === 200,
      );
      assert.deepEqual(await readyz(server), { status: 200, body: { status: 'ready', failed_organizations: [] } });
      for (const org of ORGS) await assertServed(server, key.key, org, 'after DATA_DIR came back');
      assert.deepEqual(
        await storedState(harness, null as unknown as Stores),
        stored,
        'the server changed nothing stored',
      );
      await waitFor('the server to register', 10_000, async () => {
        const cli = await reloadCli(env, ['--json']);
        return cli.code === 0 && (JSON.parse(cli.stdout) as { servers: unknown[] }).servers.length === 1;
      });
      assert.match(server.output(), /store: unavailable at start; serving 503 and retrying/);
    } finally {
      await server?.stop();
      d.cleanup();
    }
  });
});

/** While the store is down at start: /readyz and searches answer 503 `unavailable` with Retry-After: 1. */
async function assertDown(server: RunningServer, key: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const rz = await fetch(`${server.adminUrl}/readyz`, { headers: { 'x-request-id': 'rz-down' } });
    assert.equal(rz.status, 503);
    assert.equal(rz.headers.get('retry-after'), '1');
    // the message names the store and its error (it said "still loading", which hid the cause)
    const body = (await rz.json()) as { error: string; message: string; request_id: string };
    assert.deepEqual({ ...body, message: null }, { error: 'unavailable', message: null, request_id: 'rz-down' });
    assert.match(body.message, /^The store cannot be read yet \(store: .+\); retrying every second\.$/);
    const res = await fetch(`${server.url}/contacts/message-search?${probes.get(A)![0].query}`, {
      headers: { authorization: `Bearer ${key}`, 'x-request-id': 'down-1' },
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.deepEqual(await res.json(), {
      error: 'unavailable',
      message: 'The service is not ready yet; retry shortly.',
      request_id: 'down-1',
    });
    // a missing or malformed key is refused first, store or not (CONTRACT 5; it got 503)
    for (const authorization of [null, 'Bearer nope', `Basic ${key}`]) {
      const refused = await fetch(`${server.url}/contacts/message-search?${probes.get(A)![0].query}`, {
        headers: authorization === null ? {} : { authorization },
      });
      assert.equal(refused.status, 401, `${authorization}`);
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
      assert.equal(((await refused.json()) as { error: string }).error, 'unauthorized');
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('a first version refused, with serving threads (embedded store)', () => {
  test('the organization answers 503 as soon as the reload that refused it has answered', async () => {
    // Serving threads heard of the failure at the next periodic state post (up to 250 ms later)
    // and answered 200 with no data meanwhile, as for an organization without any data (a review).
    const h = await openHarness('embedded');
    const dir = tempDir('first-refused-');
    const store = await openStores(loadStoreConfig(h.env));
    let server: RunningServer | null = null;
    try {
      const of = (org: string) =>
        writeDataset(
          path.join(dir.dir, org),
          data.contacts.filter((c) => c.organization_id === org),
          data.messages.filter((m) => m.organization_id === org),
        );
      for (const org of [A, C]) mkdirSync(path.join(dir.dir, org));
      assert.equal((await importCli(h.env, of(A))).code, 0);
      const key = await createKey(h.env, [A, C], 'contacts:read,messages:read');
      server = await startServer({ ...h.serverEnv, SERVER_THREADS: '2' });
      const empty = await search(server.url, key.key, probes.get(C)![0].query);
      assert.equal(empty.status, 200, 'no data yet: an empty answer');
      assert.equal((JSON.parse(empty.text) as { data: unknown[] }).data.length, 0);
      const imported = await importCli(h.env, of(C));
      assert.equal(imported.code, 0, imported.stderr);
      await damages(h, store)
        .find((d) => d.name === 'a corrupt chunk')!
        .apply(await currentRef(store, C));
      const reload = await adminReload(server, C);
      assert.deepEqual(
        reload.body.failed.map((f) => f.organization_id),
        [C],
      );
      // at once, on fresh connections (each may reach either thread)
      for (let i = 0; i < 4; i++) {
        const r = await freshGet(
          `${server.url}/contacts/message-search?${probes.get(C)![0].query}`,
          `Bearer ${key.key}`,
        );
        assert.equal(r.status, 503, `request ${i + 1} right after the refusal: ${r.body}`);
      }
      await assertServed(server, key.key, A, 'beside the refused one');
    } finally {
      await server?.stop();
      await store.close();
      await h.cleanup();
      dir.cleanup();
    }
  });
});
