/** The embedded key store's listing: the same records while keys.json is the same file. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateKey } from '../../../src/auth/api-key.js';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import { buildIndex } from '../../../src/index/build.js';
import { EmbeddedStore } from '../../../src/store/embedded-store.js';
import { flattenIndex } from '../../../src/store/flat-index.js';
import { withLock, writerPlace } from '../../../src/store/file-utils.js';
import { within } from '../../../src/runtime/within.js';
import { generate, orgData } from '../../fixtures/gen-data.js';

/** The record of a new key `k` of one organization, last used at `lastUsed`. */
function keyRecord(k: { prefix: string; hash: string }, lastUsed: string | null): KeyRecord {
  return {
    prefix: k.prefix,
    name: '',
    hash: k.hash,
    organization_ids: ['0a0a0a0a-0000-4000-8000-00000000000a'],
    scopes: ['contacts:read', 'messages:read'],
    created_at: '2026-01-01T00:00:00.000Z',
    expires_at: null,
    revoked_at: null,
    last_used_at: lastUsed,
  };
}

test('listKeys gives the same array while keys.json is unchanged, a new one once it is replaced', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'keys-listing-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const k = generateKey();
    await store.keys.putKey(keyRecord(k, null));
    const first = await store.keys.listKeys();
    assert.equal(await store.keys.listKeys(), first, 'not read again');
    assert.equal(await store.keys.revokeKey(k.prefix, '2026-02-01T00:00:00.000Z'), true);
    const second = await store.keys.listKeys();
    assert.notEqual(second, first);
    assert.equal(second[0].revoked_at, '2026-02-01T00:00:00.000Z');
    // another process's store object sees the same file
    assert.deepEqual(await (await new EmbeddedStore(dir).open()).keys.listKeys(), second);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a server's last uses are written without the keys CLI's lock, and still read with the key", async () => {
  // a server with one thread under heavy load held .keys.lock ~10 s a flush, and `keys revoke`
  // waited that long or failed (a review): the flush now never takes that lock
  const dir = mkdtempSync(path.join(tmpdir(), 'keys-used-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const k = generateKey();
    await store.keys.putKey(keyRecord(k, '2026-01-02T00:00:00.000Z'));
    const touched = await withLock(
      path.join(dir, '.keys.lock'),
      () =>
        within(
          store.keys.touchKeys(new Map([[k.prefix, '2026-03-03T00:00:00.000Z']])).then(() => true),
          5000,
          () => false,
        ),
      dir,
    );
    assert.equal(touched, true, 'the flush did not wait for the keys lock');
    assert.equal((await store.keys.getKey(k.prefix))?.last_used_at, '2026-03-03T00:00:00.000Z');
    const other = await new EmbeddedStore(dir).open();
    assert.equal((await other.keys.listKeys())[0].last_used_at, '2026-03-03T00:00:00.000Z');
    // an older use leaves it; a value only in keys.json (written before) still counts
    await store.keys.touchKeys(new Map([[k.prefix, '2026-02-02T00:00:00.000Z']]));
    assert.equal((await store.keys.getKey(k.prefix))?.last_used_at, '2026-03-03T00:00:00.000Z');
    // another server's file, of a process of this host that ended, with a later use: read, then
    // folded into this process's file and removed by its next flush; a hand-edited value is ignored
    const usedDir = path.join(dir, 'key-used');
    const [mine] = readdirSync(usedDir);
    const deadPid = spawnSync('true').pid as number;
    const dead = mine.replace(/\.\d+\.json$/, `.${deadPid}.json`);
    writeFileSync(
      path.join(usedDir, dead),
      JSON.stringify({ [k.prefix]: '2026-04-04T00:00:00.000Z', x: 'not a date' }),
    );
    assert.equal((await other.keys.getKey(k.prefix))?.last_used_at, '2026-04-04T00:00:00.000Z');
    await store.keys.touchKeys(new Map([[k.prefix, '2026-02-02T00:00:00.000Z']]));
    assert.deepEqual(readdirSync(usedDir), [mine]);
    assert.equal((await other.keys.getKey(k.prefix))?.last_used_at, '2026-04-04T00:00:00.000Z');
    // without any file of last uses, the value keys.json carries (written by earlier versions)
    rmSync(usedDir, { recursive: true });
    assert.equal((await other.keys.getKey(k.prefix))?.last_used_at, '2026-01-02T00:00:00.000Z');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a corrupt pointer is named by the listing and replaced by the next publish of its organization', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bad-pointer-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const data = orgData(generate(1, 3, 20, 1));
    const first = await store.snapshots.publishSnapshot(data);
    writeFileSync(path.join(dir, 'snapshots', data.organizationId, 'CURRENT'), Buffer.alloc(64));
    const listed = await store.snapshots.listLatest();
    assert.deepEqual(listed.refs, []);
    assert.match(listed.unreadable[0].error, /^store: unreadable pointer of organization [0-9a-f-]{36}: .*\\u0000/);
    // the import that repairs it: it failed on the pointer before, naming nothing to do
    const second = await store.snapshots.publishSnapshot(data);
    assert.ok(second.version > first.version);
    assert.deepEqual((await store.snapshots.listLatest()).refs, [second]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a publish removes a killed import's leftovers in every organization's folder, not only its own", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dead-temps-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const a = orgData(generate(1, 3, 20, 1));
    const b = orgData(generate(2, 3, 20, 1));
    await store.snapshots.publishSnapshot(a);
    // temp names carry the writer's pid: one of a process that has exited, one of this live one
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const ns = writerPlace();
    const folders = [dir, path.join(dir, 'snapshots'), path.join(dir, 'snapshots', a.organizationId)];
    mkdirSync(folders[2], { recursive: true });
    const dayOld = Date.now() / 1000 - 2 * 86400;
    for (const f of folders) {
      // a folder named like a temp first: it stopped the clean-up of the rest (an audit)
      mkdirSync(path.join(f, `.tmp-${dead}-${ns}-afolder`));
      writeFileSync(path.join(f, `.tmp-${dead}-${ns}-halfwritten`), Buffer.alloc(1000));
      writeFileSync(path.join(f, `.tmp-${process.pid}-${ns}-inprogress`), Buffer.alloc(10));
      // a writer elsewhere (a container, or another host, on the same volume): its pid means nothing here
      writeFileSync(
        path.join(f, `.tmp-${dead}-${ns === 'abcdef01' ? 'abcdef02' : 'abcdef01'}-container`),
        Buffer.alloc(10),
      );
      // a name without a namespace (older code): judged by age only
      writeFileSync(path.join(f, `.tmp-${dead}-olderrecent`), Buffer.alloc(10));
      writeFileSync(path.join(f, `.tmp-${dead}-olderstale`), Buffer.alloc(10));
      utimesSync(path.join(f, `.tmp-${dead}-olderstale`), dayOld, dayOld);
    }
    // a second store, as a later import process opens it, publishing another organization
    const later = await new EmbeddedStore(dir).open();
    await later.snapshots.publishSnapshot(b);
    for (const f of folders) {
      const left = (name: string) => existsSync(path.join(f, name));
      assert.equal(left(`.tmp-${dead}-${ns}-halfwritten`), false, `dead temp removed in ${f}`);
      assert.equal(left(`.tmp-${process.pid}-${ns}-inprogress`), true, `live temp kept in ${f}`);
      assert.equal(
        left(`.tmp-${dead}-${ns === 'abcdef01' ? 'abcdef02' : 'abcdef01'}-container`),
        true,
        `another namespace's kept in ${f}`,
      );
      assert.equal(left(`.tmp-${dead}-olderrecent`), true, `a recent one without a namespace kept in ${f}`);
      assert.equal(left(`.tmp-${dead}-olderstale`), false, `a day-old one removed in ${f}`);
      assert.equal(left(`.tmp-${dead}-${ns}-afolder`), true, `a folder is not touched in ${f}`);
    }
    assert.deepEqual(
      (await later.snapshots.latest()).map((r) => r.organizationId).sort(),
      [a.organizationId, b.organizationId].sort(),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a publish removes a killed import's version files that no pointer names once they are a day old, in every organization's folder", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'stale-versions-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const a = orgData(generate(1, 3, 20, 1));
    const b = orgData(generate(2, 3, 20, 1));
    const c = orgData(generate(3, 3, 20, 1));
    const ref = await store.snapshots.publishSnapshot(a);
    const folderOf = (org: string) => path.join(dir, 'snapshots', org);
    const file = (org: string, v: number) => path.join(folderOf(org), `v${String(v).padStart(10, '0')}.snap`);
    const dayOld = Date.now() / 1000 - 2 * 86400;
    // a's pointer names ref.version (a day old itself: kept); above it, a killed import's version
    // of two days ago and a running import's of now
    utimesSync(file(a.organizationId, ref.version), dayOld, dayOld);
    writeFileSync(file(a.organizationId, ref.version + 1), Buffer.alloc(100));
    utimesSync(file(a.organizationId, ref.version + 1), dayOld, dayOld);
    writeFileSync(file(a.organizationId, ref.version + 2), Buffer.alloc(100));
    // c: a first import killed before its pointer existed
    mkdirSync(folderOf(c.organizationId), { recursive: true });
    writeFileSync(file(c.organizationId, 1), Buffer.alloc(100));
    utimesSync(file(c.organizationId, 1), dayOld, dayOld);
    // a later import process, publishing another organization
    const later = await new EmbeddedStore(dir).open();
    await later.snapshots.publishSnapshot(b);
    assert.equal(existsSync(file(a.organizationId, ref.version)), true, 'the version the pointer names is kept');
    assert.equal(existsSync(file(a.organizationId, ref.version + 1)), false, 'a day-old version above it is removed');
    assert.equal(existsSync(file(a.organizationId, ref.version + 2)), true, "a running import's is kept");
    assert.equal(existsSync(file(c.organizationId, 1)), false, 'a day-old version without a pointer is removed');
    assert.deepEqual(
      (await later.snapshots.latest()).map((r) => r.organizationId).sort(),
      [a.organizationId, b.organizationId].sort(),
    );
    // and a is still served from the version its pointer names
    assert.equal(
      (await later.snapshots.latest()).find((r) => r.organizationId === a.organizationId)?.version,
      ref.version,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a listing of many organizations names every pointer; small snapshots read whole and a large one a chunk a call load the same', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'many-orgs-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    // more organizations than the listing reads between two turns of the event loop (64)
    const small = Array.from({ length: 150 }, (_, i) => orgData(generate(i + 1, 2, 6, i + 1)));
    const published = [];
    for (const data of small) published.push(await store.snapshots.publishSnapshot(data));
    // one bad pointer among them is named apart, the others still listed
    const bad = small[70].organizationId;
    writeFileSync(path.join(dir, 'snapshots', bad, 'CURRENT'), '{"version":0}');
    // past the whole-read limit (1 MiB): read a chunk a call
    const large = orgData(generate(500, 40, 12_000, 7));
    const largeRef = await store.snapshots.publishSnapshot(large);
    const file = path.join(
      dir,
      'snapshots',
      large.organizationId,
      `v${String(largeRef.version).padStart(10, '0')}.snap`,
    );
    assert.ok(statSync(file).size > 1 << 20, 'the large snapshot is over 1 MiB');

    const listed = await store.snapshots.listLatest();
    const byOrg = (refs: { organizationId: string }[]) =>
      [...refs].sort((a, b) => (a.organizationId < b.organizationId ? -1 : 1));
    assert.deepEqual(byOrg(listed.refs), byOrg([...published.filter((r) => r.organizationId !== bad), largeRef]));
    assert.deepEqual(
      listed.unreadable.map((u) => u.organizationId),
      [bad],
    );
    assert.match(listed.unreadable[0].error, /bad version 0/);

    for (const [data, ref] of [
      [small[3], published[3]],
      [small[149], published[149]],
      [large, largeRef],
    ] as const) {
      const flat = await store.snapshots.loadFlatIndex(ref, { build: false });
      const built = flattenIndex(buildIndex(data));
      assert.equal(flat.messageCount, data.messages.count);
      assert.equal(flat.contactCount, data.contacts.length);
      for (const name of ['msgRowBytes', 'storedPostings', 'entryNewestIn', 'contactJsonBytes'])
        assert.deepEqual(flat.sections[name], built.sections[name], `${name} of ${ref.organizationId}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
