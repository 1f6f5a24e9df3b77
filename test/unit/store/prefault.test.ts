/**
 * The page toucher (prefault.ts): it makes a buffer's pages resident from another thread, never
 * changes a byte the copy wrote first (however the two interleave), and a load with it gives the
 * same sections as one without.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  HELPER_MIN_BYTES,
  prefaultShared,
  prefaultDuringStart,
  type PrefaultHelper,
  setPrefaultMinBytes,
  PREFAULT_MIN_BYTES,
  touchPages,
} from '../../../src/store/prefault.js';
import { EmbeddedStore } from '../../../src/store/embedded-store.js';
import { encodeSnapshot, parseManifest, prepareSnapshot, SnapshotDecoder } from '../../../src/store/snapshot-format.js';
import { generate, orgData } from '../../fixtures/gen-data.js';

// (as during a server's start: outside it nothing prefaults, see the last test)
let endStart = () => {};
before(() => {
  endStart = prefaultDuringStart(null);
});
after(() => {
  setPrefaultMinBytes(PREFAULT_MIN_BYTES);
  endStart();
});

/** A start whose large buffers `helper` takes, for the time of `body`; then a start without one again. */
function withHelper<T>(helper: PrefaultHelper, body: () => T): T {
  endStart();
  endStart = prefaultDuringStart(helper);
  try {
    return body();
  } finally {
    endStart();
    endStart = prefaultDuringStart(null);
  }
}

const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);

/** This process's mappings (address ranges), each with its resident KiB (/proc/self/smaps). */
function mappings(): Map<string, number> {
  const out = new Map<string, number>();
  let range = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+-[0-9a-f]+) /.exec(line);
    if (head !== null) range = head[1];
    else if (line.startsWith('Rss:')) out.set(range, Number(/\d+/.exec(line)![0]));
  }
  return out;
}

/**
 * Resident KiB of the mappings made since `before` (a buffer allocated since among them). Not the
 * growth of the process's RSS: memory an earlier test let go, unmapped meanwhile, lowered that
 * below the buffer's size once in CI.
 */
function residentSince(before: Map<string, number>): number {
  let kib = 0;
  for (const [range, rss] of mappings()) if (!before.has(range)) kib += rss;
  return kib;
}

test('below the threshold nothing starts', () => {
  assert.equal(prefaultShared(new SharedArrayBuffer(1 << 20)), null);
});

test('it makes every page of the buffer resident', async () => {
  setPrefaultMinBytes(0);
  try {
    const bytes = 96 * 1024 * 1024;
    const before = mappings();
    const buffer = new SharedArrayBuffer(bytes);
    const p = prefaultShared(buffer)!;
    assert.ok(p !== null);
    await p.ended;
    const grown = residentSince(before);
    assert.ok(grown > 0.9 * (bytes / 1024), `RSS grew ${grown} KiB for a ${bytes / 1024} KiB buffer`);
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
  }
});

test('a copy running against it keeps every byte it wrote (odd sizes, both directions met)', async () => {
  setPrefaultMinBytes(0);
  try {
    for (const bytes of [64 * 1024 * 1024 + 12, 4100, 4]) {
      const buffer = new SharedArrayBuffer(bytes);
      const u8 = new Uint8Array(buffer);
      const p = prefaultShared(buffer)!;
      // non-zero everywhere, zero words too (a zero written over a zero is still a zero)
      const chunk = Buffer.alloc(1 << 16);
      for (let i = 0; i < chunk.length; i++) chunk[i] = i % 8192 < 8 ? 0 : (i * 7 + 1) & 255 || 1; // every other page starts with a zero word
      for (let off = 0; off < bytes; off += chunk.length) {
        u8.set(chunk.subarray(0, Math.min(chunk.length, bytes - off)), off);
        if (off % (8 << 20) === 0) await new Promise((r) => setImmediate(r)); // let the toucher overtake
      }
      await p.ended;
      for (let off = 0; off < bytes; off++) {
        if (u8[off] !== chunk[off % chunk.length]) assert.fail(`byte ${off} of ${bytes} changed`);
      }
    }
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
  }
});

test('stop() ends it early', async () => {
  setPrefaultMinBytes(0);
  try {
    const p = prefaultShared(new SharedArrayBuffer(256 * 1024 * 1024))!;
    p.stop();
    await p.ended;
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
  }
});

test('a load with the toucher gives the same sections as one without', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'prefault-'));
  const store = new EmbeddedStore(dir);
  try {
    const g = generate(3, 60, 4000);
    g.messages.forEach((m, i) => {
      if (i % 3 === 0) m.content = `${m.content} ${'ação '.repeat(800)}`; // several chunks
    });
    const ref = await store.snapshots.publishSnapshot(orgData(g));
    const bytesOf = async () => {
      const flat = await store.snapshots.loadFlatIndex(ref);
      return Object.entries(flat.sections).map(([k, a]) => [k, Buffer.from(a.buffer, a.byteOffset, a.byteLength)]);
    };
    const plain = await bytesOf();
    setPrefaultMinBytes(0);
    const touched = await bytesOf();
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
    assert.deepEqual(touched, plain);
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a helper thread's touchPages: every page resident, the copy's bytes kept, stopped by its flag", async () => {
  const bytes = 48 * 1024 * 1024 + 100;
  const before = mappings();
  const buffer = new SharedArrayBuffer(bytes);
  const u8 = new Uint8Array(buffer);
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const touching = touchPages(buffer, stop);
  // a copy from the start meanwhile, between the slices
  for (let off = 0; off < bytes; off += 1 << 20) {
    u8.fill(9, off, Math.min(bytes, off + (1 << 20)));
    await new Promise((r) => setImmediate(r));
  }
  await touching;
  const resident = residentSince(before);
  assert.ok(resident > 0.9 * (bytes / 1024), `${resident} KiB resident for a ${bytes / 1024} KiB buffer`);
  assert.ok(u8.every((b) => b === 9));
  // stopped at once: nothing touched
  const other = new SharedArrayBuffer(64 * 1024 * 1024);
  Atomics.store(stop, 0, 1);
  const at = rssKiB();
  await touchPages(other, stop);
  assert.ok(rssKiB() - at < 8 * 1024);
});

test('a registered helper takes buffers from HELPER_MIN_BYTES on; its stop() sets the flag', () => {
  const asked: Array<[SharedArrayBuffer, Int32Array]> = [];
  const big = new SharedArrayBuffer(HELPER_MIN_BYTES);
  withHelper(
    (buffer, stop) => {
      asked.push([buffer, stop]);
      return true;
    },
    () => {
      assert.equal(prefaultShared(new SharedArrayBuffer(HELPER_MIN_BYTES - 8)), null, 'smaller: no helper, no worker');
      const p = prefaultShared(big)!;
      assert.equal(asked.length, 1);
      assert.equal(asked[0][0], big);
      assert.equal(p.ended, undefined);
      assert.equal(Atomics.load(asked[0][1], 0), 0);
      p.stop();
      assert.equal(Atomics.load(asked[0][1], 0), 1);
    },
  );
  // a helper that cannot (no thread) leaves the buffer to the worker rule
  withHelper(
    () => false,
    () => assert.equal(prefaultShared(big), null),
  );
});

test('a decoder refused in its constructor starts no toucher; abandon() stops a started one', () => {
  const g = generate(5, 20, 300);
  const enc = encodeSnapshot(prepareSnapshot(orgData(g)), 2);
  for (const _ of enc.chunks); // the manifest counts the chunks once they are made
  const manifest = parseManifest(enc.manifest(), { organizationId: g.contacts[0].organization_id, version: 2 });
  const stops: Int32Array[] = [];
  setPrefaultMinBytes(0);
  try {
    withHelper(
      (_buffer, stop) => {
        stops.push(stop);
        return true;
      },
      () => {
        // another layout: a section missing, found after the shared sections are allocated
        const lacking = {
          ...manifest,
          sections: manifest.sections!.filter((e) => !(Array.isArray(e) && e[0] === 'tokenBytes')),
        };
        assert.throws(() => new SnapshotDecoder(lacking, {}, 'serve'), /has no section tokenBytes/);
        assert.equal(stops.length, 0);
        const decoder = new SnapshotDecoder(manifest, {}, 'serve');
        assert.equal(stops.length, 1);
        assert.equal(Atomics.load(stops[0], 0), 0);
        decoder.abandon();
        assert.equal(Atomics.load(stops[0], 0), 1);
      },
    );
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
  }
});

test('outside the start, no load prefaults (a reload leaves the cores to the searches)', () => {
  setPrefaultMinBytes(0);
  let asked = 0;
  endStart();
  // a start whose helper is gone with it, as main.ts ends it once the first loads are done
  prefaultDuringStart(() => {
    asked++;
    return true;
  })();
  try {
    assert.equal(prefaultShared(new SharedArrayBuffer(HELPER_MIN_BYTES)), null);
    assert.equal(asked, 0);
  } finally {
    setPrefaultMinBytes(PREFAULT_MIN_BYTES);
    endStart = prefaultDuringStart(null);
  }
});
