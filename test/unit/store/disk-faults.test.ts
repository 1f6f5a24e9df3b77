/**
 * Disk faults on the embedded store (issue 6), in-process: ENOSPC and EIO injected into the file
 * functions the store uses (`fs.promises.open` handing out file handles whose write, writeFile or
 * sync fails, failing after N bytes; `link`, `rename`), at every step of a publish and of a keys
 * write. After each fault: publishSnapshot rejects with a "store:" error naming the organization
 * and the cause, latest() still names the previous version, loading it gives the old data, no
 * temp file or orphan version file is left, and the next publish succeeds. A failing write of
 * keys.json leaves the previous file intact. When the test runs as root and may mount a tmpfs,
 * a real 256 KiB file system gets full as well.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fsp, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { OrgData } from '../../../src/model/records.js';
import { EmbeddedStore } from '../../../src/store/embedded-store.js';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import type { SnapshotRef } from '../../../src/store/snapshot-store.js';
import { tempDir } from '../../helpers/e2e.js';
import { generate, orgData, uuid } from '../../fixtures/gen-data.js';

type Code = 'ENOSPC' | 'EIO';

function errno(code: Code, syscall: string, file?: string): NodeJS.ErrnoException {
  const text = code === 'ENOSPC' ? 'no space left on device' : 'i/o error';
  return Object.assign(new Error(`${code}: ${text}, ${syscall}${file ? ` '${file}'` : ''}`), {
    code,
    errno: code === 'ENOSPC' ? -28 : -5,
    syscall,
  });
}

interface Fault {
  /** where it strikes */
  at: 'write' | 'sync' | 'link' | 'rename';
  code: Code;
  /** for 'write': bytes accepted (across the handles of matching files) before the failure */
  afterBytes?: number;
  /** only files whose base name matches */
  file?: RegExp;
  /** for 'write': only this method of the handle (default both) */
  via?: 'write' | 'writeFile';
}

const realOpen = fsp.open.bind(fsp);
const realLink = fsp.link.bind(fsp);
const realRename = fsp.rename.bind(fsp);

/**
 * Makes the store's file functions fail as `f` says until the test ends (t.mock restores them).
 * Writes short of the limit go through; the write that crosses it writes what fits, then fails,
 * as a full disk does. Returns a counter of the faults raised.
 */
function inject(t: TestContext, f: Fault): { raised: number } {
  const state = { raised: 0 };
  let written = 0;
  const matches = (file: unknown): boolean => f.file === undefined || f.file.test(path.basename(String(file)));
  t.mock.method(fsp, 'open', async (file: string, flags?: string | number, mode?: number) => {
    const fh = await realOpen(file, flags, mode);
    const writable = typeof flags === 'string' && /[wa+]/.test(flags);
    if (!writable || !matches(file)) return fh;
    const h = fh as unknown as Record<string, unknown>;
    if (f.at === 'write') {
      const limit = f.afterBytes ?? 0;
      const write = fh.write.bind(fh) as (b: Uint8Array) => Promise<unknown>;
      const take = async (buf: Uint8Array, syscall: string): Promise<void> => {
        const bytes = typeof buf === 'string' ? Buffer.from(buf) : buf;
        if (written + bytes.length <= limit) {
          written += bytes.length;
          await write(bytes);
          return;
        }
        const room = limit - written;
        if (room > 0) await write(bytes.subarray(0, room));
        written = limit;
        state.raised++;
        throw errno(f.code, syscall);
      };
      if (f.via !== 'writeFile')
        h.write = async (buf: Uint8Array) => {
          await take(buf, 'write');
          return { bytesWritten: buf.length, buffer: buf };
        };
      if (f.via !== 'write')
        h.writeFile = async (data: Uint8Array | string) =>
          take(typeof data === 'string' ? Buffer.from(data) : data, 'write');
    } else if (f.at === 'sync') {
      h.sync = async () => {
        state.raised++;
        throw errno(f.code, 'fsync');
      };
    }
    return fh;
  });
  if (f.at === 'link') {
    t.mock.method(fsp, 'link', async (from: string, to: string) => {
      if (!matches(to)) return realLink(from, to);
      state.raised++;
      throw errno(f.code, 'link', to);
    });
  }
  if (f.at === 'rename') {
    t.mock.method(fsp, 'rename', async (from: string, to: string) => {
      if (!matches(to)) return realRename(from, to);
      state.raised++;
      throw errno(f.code, 'rename', to);
    });
  }
  return state;
}

const ORG = uuid(31, 0);
const SNAP = /^v\d{10}\.snap$/;

describe('disk faults on the embedded store (injected ENOSPC / EIO)', () => {
  const work = tempDir('disk-faults-');
  let store: EmbeddedStore;
  let current: { ref: SnapshotRef; data: OrgData };
  let seed = 1;
  const orgDir = (): string => path.join(store.dataDir, 'snapshots', ORG);

  /** A version of ORG big enough for several chunks (the writes of one publish cross many limits). */
  function nextData(): OrgData {
    const g = generate(31, 30, 2500, seed++);
    g.messages.forEach((m, i) => {
      if (i % 4 === 0) m.content += ` ${'preço '.repeat(2500)}`;
    });
    return orgData(g);
  }

  before(async () => {
    store = await new EmbeddedStore(work.dir).open();
    const data = nextData();
    current = { ref: await store.snapshots.publishSnapshot(data), data };
  });
  after(() => work.cleanup());

  /** What must hold after any failed publish. */
  async function assertNothingChanged(what: string): Promise<void> {
    assert.deepEqual(
      (await store.snapshots.latest()).filter((r) => r.organizationId === ORG),
      [current.ref],
      `${what}: latest() moved`,
    );
    assert.deepEqual(
      await store.snapshots.loadSnapshot(current.ref),
      current.data,
      `${what}: the previous snapshot changed`,
    );
    const names = readdirSync(orgDir());
    assert.deepEqual(
      names.filter((n) => n.startsWith('.tmp-')),
      [],
      `${what}: temp files left`,
    );
    const versions = names.filter((n) => SNAP.test(n)).map((n) => Number(n.slice(1, 11)));
    assert.ok(
      versions.every((v) => v <= current.ref.version),
      `${what}: an orphan newer version file is left (${names})`,
    );
    assert.equal(JSON.parse(readFileSync(path.join(orgDir(), 'CURRENT'), 'utf8')).version, current.ref.version);
  }

  const snapshotFaults: [string, Fault][] = [
    ['ENOSPC on the first byte of the snapshot file', { at: 'write', code: 'ENOSPC', afterBytes: 0, file: /^\.tmp-/ }],
    ['ENOSPC after 100 bytes of the snapshot file', { at: 'write', code: 'ENOSPC', afterBytes: 100, file: /^\.tmp-/ }],
    [
      'ENOSPC after 5 MB (past the first chunk)',
      { at: 'write', code: 'ENOSPC', afterBytes: 5_000_000, file: /^\.tmp-/ },
    ],
    ['EIO at the fsync of the snapshot file', { at: 'sync', code: 'EIO', file: /^\.tmp-/ }],
    ['ENOSPC at link() to the version name', { at: 'link', code: 'ENOSPC', file: SNAP }],
    // Snapshot chunks go through write(), the pointer through writeFile(): this fails the pointer only.
    [
      'ENOSPC writing the new pointer (CURRENT temp file)',
      { at: 'write', via: 'writeFile', code: 'ENOSPC', afterBytes: 0, file: /^\.tmp-/ },
    ],
    ['EIO at rename() of the new pointer', { at: 'rename', code: 'EIO', file: /^CURRENT$/ }],
  ];

  for (const [name, fault] of snapshotFaults) {
    test(`${name}: publish rejects naming the organization; the previous version stays whole`, async (t) => {
      const data = nextData();
      const state = inject(t, fault);
      await assert.rejects(store.snapshots.publishSnapshot(data), (err: Error) => {
        assert.match(err.message, new RegExp(`^store: publishing organization ${ORG}: ${fault.code}: `));
        return true;
      });
      assert.ok(state.raised > 0, 'the fault struck');
      t.mock.restoreAll();
      await assertNothingChanged(name);
      // The fault cleared: the next publish goes through and is served.
      const next = nextData();
      const ref = await store.snapshots.publishSnapshot(next);
      assert.ok(ref.version > current.ref.version);
      assert.deepEqual(await store.snapshots.latest(), [ref]);
      assert.deepEqual(await store.snapshots.loadSnapshot(ref), next);
      current = { ref, data: next };
    });
  }

  test('EIO at the directory fsync after the pointer switch: the error is reported, the new version is whole and stays', async (t) => {
    // The only fault after the switch: publish cannot promise durability, but must not destroy what it switched to.
    const data = nextData();
    let syncs = 0;
    t.mock.method(fsp, 'open', async (file: string, flags?: string | number, mode?: number) => {
      const fh = await realOpen(file, flags, mode);
      // The directory opened for fsync after CURRENT's rename: the second directory fsync of the publish.
      if (String(file) === orgDir() && (flags === 'r' || flags === undefined) && ++syncs === 2) {
        (fh as unknown as Record<string, unknown>).sync = async () => {
          throw errno('EIO', 'fsync');
        };
      }
      return fh;
    });
    await assert.rejects(
      store.snapshots.publishSnapshot(data),
      new RegExp(`^Error: store: publishing organization ${ORG}: EIO`),
    );
    t.mock.restoreAll();
    const [ref] = await store.snapshots.latest();
    assert.ok(ref.version > current.ref.version, 'the pointer had switched');
    assert.deepEqual(await store.snapshots.loadSnapshot(ref), data, 'and what it names is whole');
    assert.deepEqual(
      readdirSync(orgDir()).filter((n) => n.startsWith('.tmp-')),
      [],
    );
    current = { ref, data };
  });

  describe('keys.json', () => {
    const key = (prefix: string): KeyRecord => ({
      prefix,
      name: `key ${prefix}`,
      hash: 'cd'.repeat(32),
      organization_ids: [ORG],
      scopes: ['contacts:read'],
      created_at: '2024-01-01T00:00:00.000Z',
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    });
    before(async () => {
      await store.keys.putKey(key('aaaa0001'));
      await store.keys.putKey(key('aaaa0002'));
    });

    const keyFaults: [string, Fault][] = [
      ['ENOSPC on the first byte', { at: 'write', code: 'ENOSPC', afterBytes: 0, file: /^\.tmp-/ }],
      ['ENOSPC halfway', { at: 'write', code: 'ENOSPC', afterBytes: 150, file: /^\.tmp-/ }],
      ['EIO at fsync', { at: 'sync', code: 'EIO', file: /^\.tmp-/ }],
      ['EIO at rename', { at: 'rename', code: 'EIO', file: /^keys\.json$/ }],
      // the lock file made but its owner not written: it was left behind, and the next write
      // waited 15 s for it and failed (the owner is now written to a temp file of its own, then
      // linked into place: the first temp file written is the lock's)
      ['ENOSPC writing the lock', { at: 'write', code: 'ENOSPC', afterBytes: 0, file: /^\.tmp-/, via: 'writeFile' }],
    ];
    for (const [n, [name, fault]] of keyFaults.entries()) {
      const fresh = `bbbb000${n}`;
      test(`${name}: the write rejects, the previous keys file is intact, no temp file is left`, async (t) => {
        const before = readFileSync(path.join(store.dataDir, 'keys.json'), 'utf8');
        const state = inject(t, fault);
        await assert.rejects(store.keys.putKey(key(fresh)), new RegExp(`^Error: store: writing keys: ${fault.code}: `));
        await assert.rejects(
          store.keys.revokeKey('aaaa0001', '2024-05-05T00:00:00.000Z'),
          /^Error: store: writing keys: /,
        );
        assert.ok(state.raised >= 2);
        t.mock.restoreAll();
        assert.equal(readFileSync(path.join(store.dataDir, 'keys.json'), 'utf8'), before);
        assert.deepEqual(
          readdirSync(store.dataDir).filter((n) => n.startsWith('.tmp-') || n.startsWith('.keys.lock')),
          [],
        );
        assert.equal((await store.keys.getKey('aaaa0001'))?.revoked_at, null);
        assert.equal(await store.keys.getKey(fresh), null);
        // Cleared: the write goes through.
        await store.keys.putKey(key(fresh));
        assert.equal((await store.keys.getKey(fresh))?.prefix, fresh);
      });
    }
  });
});

// ---- a real full file system

function tryMountTmpfs(dir: string, size: string): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('a real full tmpfs (root only)', () => {
  const work = tempDir('disk-full-');
  const mnt = path.join(work.dir, 'mnt');
  mkdirSync(mnt);
  const mounted = tryMountTmpfs(mnt, '256k');
  after(() => {
    if (mounted) execFileSync('umount', [mnt], { stdio: 'ignore' });
    work.cleanup();
  });

  test('ENOSPC for real: publish rejects, the previous snapshot and keys stay, the space is given back', {
    skip: mounted ? false : 'cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)',
  }, async () => {
    const store = await new EmbeddedStore(mnt).open();
    const small = orgData(generate(32, 5, 200, 1));
    const ref = await store.snapshots.publishSnapshot(small);
    await store.keys.putKey({
      prefix: 'cccc0001',
      name: 'k',
      hash: 'ef'.repeat(32),
      organization_ids: [uuid(32, 0)],
      scopes: ['contacts:read'],
      created_at: '2024-01-01T00:00:00.000Z',
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    });
    const keysBefore = readFileSync(path.join(mnt, 'keys.json'), 'utf8');
    const dfBefore = readdirSync(path.join(mnt, 'snapshots', uuid(32, 0))).sort();
    // ~600 KB of content: cannot fit in 256 KiB.
    const g = generate(32, 5, 200, 2);
    g.messages.forEach((m) => {
      m.content = 'x'.repeat(3000);
    });
    const big = orgData(g);
    await assert.rejects(
      store.snapshots.publishSnapshot(big),
      // and where: the system's message for a failed write names no path (an operator audit)
      new RegExp(`^Error: store: publishing organization ${uuid(32, 0)}: ENOSPC.*${mnt}`),
    );
    assert.deepEqual(await store.snapshots.latest(), [ref]);
    assert.deepEqual(await store.snapshots.loadSnapshot(ref), small);
    assert.deepEqual(
      readdirSync(path.join(mnt, 'snapshots', uuid(32, 0))).sort(),
      dfBefore,
      'no temp or orphan file left',
    );
    // A keys write on the full disk fails or succeeds, but never damages the file.
    await store.keys.putKey({ ...JSON.parse(keysBefore).cccc0001, prefix: 'cccc0002' }).catch(() => {});
    assert.ok(JSON.parse(readFileSync(path.join(mnt, 'keys.json'), 'utf8')).cccc0001);
    // The space of the failed write was given back: a second small version fits.
    const small2 = orgData(generate(32, 5, 200, 3));
    const ref2 = await store.snapshots.publishSnapshot(small2);
    assert.deepEqual(await store.snapshots.loadSnapshot(ref2), small2);
    assert.ok(keysBefore.length > 0);
    await store.close();
  });
});
