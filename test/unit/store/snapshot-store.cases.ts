/**
 * The snapshot store's shared cases (hono's router cases): every SnapshotStore backend runs them
 * (test/unit/store/store.test.ts). `tamper` damages a stored snapshot the backend's own way.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Manifest } from '../../../src/store/snapshot-format.js';
import type { SnapshotRef, SnapshotStore } from '../../../src/store/snapshot-store.js';
import { generate, orgData, uuid } from '../../fixtures/gen-data.js';

/** How a backend damages one stored snapshot, for the corruption cases. */
export interface Tamper {
  /** Flips one byte of the first chunk of `ref`. */
  corruptChunk(ref: SnapshotRef): Promise<void>;
  /** Rewrites the manifest of `ref` with another format version, or as `format` maps it (and a valid checksum). */
  setFormat(ref: SnapshotRef, format: number | ((m: Manifest) => Manifest)): Promise<void>;
  /** Makes the organization's pointer unreadable, in the backend's form number `how` (0-3). */
  garblePointer(org: string, how: number): Promise<void>;
}

/** Registers the cases; `store()` is read once the enclosing suite has opened it. */
export function snapshotStoreCases(store: () => SnapshotStore, tamper: Tamper): void {
  describe('snapshot store', () => {
    test('publish then load round-trips exactly, over several chunks', async () => {
      const g = generate(1, 40, 3000);
      // ~12 MB of content: several chunks.
      g.messages.forEach((m, i) => {
        if (i % 3 === 0) m.content = `${m.content} ${'ação '.repeat(1000)}`;
      });
      const data = orgData(g);
      const ref = await store().publishSnapshot(data);
      assert.equal(ref.organizationId, uuid(1, 0));
      assert.deepEqual(await store().loadSnapshot(ref), data);
    });

    test('an organization with contacts and no messages round-trips', async () => {
      const data = orgData(generate(2, 3, 0));
      assert.deepEqual(await store().loadSnapshot(await store().publishSnapshot(data)), data);
    });

    test('latest names the newest version; a re-publish replaces one organization only', async () => {
      const a1 = await store().publishSnapshot(orgData(generate(3, 5, 50, 1)));
      const b1 = await store().publishSnapshot(orgData(generate(4, 5, 50, 1)));
      const a2data = orgData(generate(3, 6, 70, 2));
      const a2 = await store().publishSnapshot(a2data);
      assert.ok(a2.version > a1.version);
      const latest = new Map((await store().latest()).map((r) => [r.organizationId, r.version]));
      assert.equal(latest.get(uuid(3, 0)), a2.version);
      assert.equal(latest.get(uuid(4, 0)), b1.version);
      assert.deepEqual(await store().loadSnapshot(a2), a2data);
      assert.equal((await store().loadSnapshot(b1)).messages.count, 50);
    });

    test('keeps the previous version, removes older ones', async () => {
      const refs = [];
      for (let s = 1; s <= 4; s++) refs.push(await store().publishSnapshot(orgData(generate(5, 3, 10, s))));
      await store().loadSnapshot(refs[2]);
      await assert.rejects(store().loadSnapshot(refs[1]), /^Error: store: /);
    });

    // A CLI audit: on Redis such an import failed with a Lua error (a version that is no number)
    // or WRONGTYPE (a pointer that is no hash), and the organization could not be repaired.
    test('an unreadable pointer is named by the listing and replaced by the next publish', async () => {
      for (const how of [0, 1, 2, 3]) {
        const org = uuid(16 + how, 0);
        await store().publishSnapshot(orgData(generate(16 + how, 3, 20, 1)));
        await tamper.garblePointer(org, how);
        await assert.rejects(store().latest(), new RegExp(`unreadable pointer of organization ${org}`));
        const data = orgData(generate(16 + how, 4, 30, 2));
        const ref = await store().publishSnapshot(data);
        const latest = new Map((await store().latest()).map((r) => [r.organizationId, r.version]));
        assert.equal(latest.get(org), ref.version);
        assert.deepEqual(await store().loadSnapshot(ref), data);
      }
    });

    test('a corrupted chunk is refused; the previous version stays loadable', async () => {
      const old = await store().publishSnapshot(orgData(generate(6, 5, 200, 1)));
      const bad = await store().publishSnapshot(orgData(generate(6, 5, 200, 2)));
      await tamper.corruptChunk(bad);
      await assert.rejects(store().loadSnapshot(bad), (err: Error) =>
        /^snapshot: corrupt snapshot of organization .* version \d+: chunk 0 checksum mismatch$/.test(err.message),
      );
      assert.equal((await store().loadSnapshot(old)).messages.count, 200);
    });

    test('an unknown format version is refused, naming version and organization', async () => {
      const ref = await store().publishSnapshot(orgData(generate(7, 2, 5)));
      await tamper.setFormat(ref, 7);
      await assert.rejects(store().loadSnapshot(ref), {
        message: `snapshot: unknown format version 7 for organization ${uuid(7, 0)}`,
      });
      await assert.rejects(store().loadFlatIndex(ref), {
        message: `snapshot: unknown format version 7 for organization ${uuid(7, 0)}`,
      });
    });

    test('an older format-1 snapshot (record columns) still loads: its index is built on load', async () => {
      const data = orgData(generate(11, 6, 300, 1));
      const ref = await store().publishSnapshot(data, { format: 1 });
      assert.deepEqual(await store().loadSnapshot(ref), data);
      const v1 = await store().loadFlatIndex(ref);
      const v2 = await store().loadFlatIndex(await store().publishSnapshot(data));
      assert.equal(v1.messageCount, 300);
      assert.deepEqual(Object.keys(v1.sections).sort(), Object.keys(v2.sections).sort());
      for (const [k, a] of Object.entries(v2.sections)) {
        assert.ok(v1.sections[k].buffer instanceof SharedArrayBuffer && a.buffer instanceof SharedArrayBuffer, k);
        assert.deepEqual([...v1.sections[k]], [...a], `section ${k}`);
      }
      // served flats carry no contact records (pages copy contactJsonBytes, compared above)
      assert.deepEqual([v1.contacts, v2.contacts], [[], []]);
    });

    test('a format-2 snapshot of another index layout is refused, naming the organization, version and command', async () => {
      const old = await store().publishSnapshot(orgData(generate(12, 3, 40, 1)));
      const ref = await store().publishSnapshot(orgData(generate(12, 3, 40, 2)));
      await tamper.setFormat(ref, (m) => ({
        ...m,
        sections: m.sections!.filter(([name]) => name !== 'storedPostings'),
      }));
      const refused = {
        message: `snapshot: organization ${uuid(12, 0)} version ${ref.version} has no section storedPostings (another index layout); publish it again with \`npm run snapshot -- import\``,
      };
      await assert.rejects(store().loadFlatIndex(ref), refused);
      await tamper.setFormat(ref, (m) => ({
        ...m,
        sections: m.sections!.map(([n, t, l]) => (n === 'entryStart' ? [n, 'Float64Array', l] : [n, t, l])),
      }));
      await assert.rejects(
        store().loadFlatIndex(ref),
        /a differently typed section entryStart \(another index layout\)/,
      );
      // 3 contacts: entryContact must be 16 bits wide (contactColumnType), 32 is another layout
      await tamper.setFormat(ref, (m) => ({
        ...m,
        sections: m.sections!.map(([n, t, l]) =>
          n === 'entryContact' || n === 'entryStart' ? [n, 'Uint32Array', l] : [n, t, l],
        ),
      }));
      await assert.rejects(
        store().loadFlatIndex(ref),
        /a differently typed section entryContact \(another index layout\)/,
      );
      assert.equal((await store().loadFlatIndex(old)).messageCount, 40);
    });

    test('a manifest counting fewer contacts than its chunks hold is refused, by a load that steps over the contact records too', async () => {
      const ref = await store().publishSnapshot(orgData(generate(15, 4, 120, 1)));
      await tamper.setFormat(ref, (m) => ({ ...m, contacts: m.contacts - 1 }));
      const corrupt = new RegExp(
        `^Error: snapshot: corrupt snapshot of organization ${uuid(15, 0)} version ${ref.version}: chunk \\d+: malformed part`,
      );
      // loadFlatIndex serves (the rows are walked, not decoded); loadSnapshot exports (decoded)
      await assert.rejects(store().loadFlatIndex(ref), corrupt);
      await assert.rejects(store().loadSnapshot(ref), corrupt);
    });

    test('the export sections give the import back but are not in the served index', async () => {
      const data = orgData(generate(14, 4, 120, 1));
      const ref = await store().publishSnapshot(data);
      assert.deepEqual(await store().loadSnapshot(ref), data);
      const served = await store().loadFlatIndex(ref);
      assert.equal(served.sections.msgContact, undefined);
      assert.equal(served.sections.sourceOrder, undefined);
      assert.ok(served.sections.storedPostings.buffer instanceof SharedArrayBuffer);
      // a manifest that drops the section its chunks still carry is corrupt, named as such
      await tamper.setFormat(ref, (m) => ({ ...m, sections: m.sections!.filter(([name]) => name !== 'msgContact') }));
      await assert.rejects(
        store().loadFlatIndex(ref),
        new RegExp(
          `^Error: snapshot: corrupt snapshot of organization ${uuid(14, 0)} version ${ref.version}: chunk \\d+: malformed part`,
        ),
      );
      // an export section of another element type is a known section typed differently
      await tamper.setFormat(ref, (m) => ({
        ...m,
        sections: [...m.sections!, ['msgContact', 'Uint16Array', data.messages.count]],
      }));
      await assert.rejects(
        store().loadFlatIndex(ref),
        /a differently typed section msgContact \(another index layout\)/,
      );
    });

    test('a truncated chunk is refused with organization and version', async () => {
      const ref = await store().publishSnapshot(orgData(generate(13, 3, 40, 1)));
      await tamper.setFormat(ref, (m) => ({ ...m, chunks: m.chunks.map((c) => ({ ...c, length: c.length + 10 })) }));
      await assert.rejects(
        store().loadFlatIndex(ref),
        new RegExp(`^Error: snapshot: .*organization ${uuid(13, 0)} version ${ref.version}`),
      );
    });

    test('a re-publish of the same data is verified, not loaded, against the digest in service', async () => {
      const first = await store().publishSnapshot(orgData(generate(14, 6, 300, 1)));
      const served = await store().loadFlatIndex(first);
      assert.match(served.digest ?? '', /^[0-9a-f]{64}$/);
      const same = await store().publishSnapshot(orgData(generate(14, 6, 300, 1)));
      assert.ok(same.version > first.version);
      assert.equal(await store().loadChangedFlatIndex(same, served.digest), null);
      // without the digest in service, or with another, it loads as always
      assert.equal((await store().loadChangedFlatIndex(same, undefined))?.digest, served.digest);
      assert.equal((await store().loadChangedFlatIndex(same, 'f'.repeat(64)))?.messageCount, 300);
      const changed = await store().publishSnapshot(orgData(generate(14, 6, 301, 1)));
      const loaded = await store().loadChangedFlatIndex(changed, served.digest);
      assert.equal(loaded?.messageCount, 301);
      assert.notEqual(loaded?.digest, served.digest);
    });

    test('a same-content snapshot with a corrupt or truncated chunk is still refused, named', async () => {
      const first = await store().publishSnapshot(orgData(generate(15, 5, 200, 1)));
      const digest = (await store().loadFlatIndex(first)).digest;
      const bad = await store().publishSnapshot(orgData(generate(15, 5, 200, 1)));
      await tamper.corruptChunk(bad);
      await assert.rejects(store().loadChangedFlatIndex(bad, digest), (err: Error) =>
        /^snapshot: corrupt snapshot of organization .* version \d+: chunk 0 checksum mismatch$/.test(err.message),
      );
      const short = await store().publishSnapshot(orgData(generate(15, 5, 200, 1)));
      await tamper.setFormat(short, (m) => ({ ...m, chunks: m.chunks.map((c) => ({ ...c, length: c.length + 10 })) }));
      await assert.rejects(
        store().loadChangedFlatIndex(short, digest),
        new RegExp(`^Error: snapshot: .*organization ${uuid(15, 0)} version ${short.version}`),
      );
    });

    test('refuses an organization id that is not a lower-case UUID', async () => {
      const data = orgData(generate(8, 1, 1));
      data.organizationId = '../../etc';
      await assert.rejects(store().publishSnapshot(data), /^Error: store: organization id must be a lower-case UUID/);
    });
  });
}
