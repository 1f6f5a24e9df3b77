/**
 * A snapshot read as stored hands its shared sections on with the index: the serving threads
 * are posted these same SharedArrayBuffers, not a copy (a copy cost 1.8x RSS with 2 threads).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync } from 'node:fs';
import { after, it } from 'node:test';
import { IndexBuilder } from '../../../src/catalog/index-builder.js';
import { snapshotFile } from '../../../src/store/embedded-store.js';
import { openStores } from '../../../src/store/open-store.js';
import { oneContactData } from '../../helpers/one-contact.js';
import { tempDataDir } from '../../helpers/server.js';

const ORG = '0c0c0c0c-0000-4000-8000-000000000001';
const data = tempDataDir();
after(() => data.cleanup());

it('a format-2 snapshot loads with its flat sections, all shared, the index reading the same memory', async () => {
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  try {
    const ref = await store.snapshots.publishSnapshot(
      oneContactData(ORG, '1e1e1e1e-0000-4000-8000-000000000001', ['meu pedido chegou']),
    );
    const quiet = { info() {}, warn() {} };
    const built = await new IndexBuilder(store.snapshots, null, quiet).load(ref);
    assert.ok(built.flat, 'the flat sections come with the index');
    for (const [name, section] of Object.entries(built.flat.sections))
      assert.ok(section.buffer instanceof SharedArrayBuffer, `${name} is in shared memory`);
    const index = built.index as unknown as Record<string, { buffer: ArrayBufferLike }>;
    assert.equal(
      index.storedPostings.buffer,
      built.flat.sections.storedPostings.buffer,
      'the index wraps them, no copy',
    );
  } finally {
    await store.close();
  }
});

it('a load the build worker never answers fails at its deadline, named; the next load starts a new worker', async () => {
  // a worker that neither answered nor ended held the catalog's one queue, and every later
  // reload behind it (a review); here its read blocks on a FIFO where the snapshot file should be
  const dir = tempDataDir();
  const store = await openStores({ redisUrl: null, dataDir: dir.dir });
  const fifo = { path: '' };
  try {
    const one = oneContactData(ORG, '1e1e1e1e-0000-4000-8000-000000000001', ['meu pedido chegou']);
    const v1 = await store.snapshots.publishSnapshot(one);
    const v2 = await store.snapshots.publishSnapshot(
      oneContactData(ORG, '1e1e1e1e-0000-4000-8000-000000000001', ['outro pedido']),
    );
    fifo.path = snapshotFile(dir.dir, v2);
    rmSync(fifo.path);
    execFileSync('mkfifo', [fifo.path]);
    const quiet = { info() {}, warn() {} };
    const builder = new IndexBuilder(
      store.snapshots,
      () => ({ redisUrl: null, dataDir: dir.dir }),
      quiet,
      undefined,
      1500,
    );
    builder.serving = true;
    await assert.rejects(builder.load(v2), /^Error: catalog: the build worker gave no answer within 1\.5 s; stopped$/);
    // let the blocked read go (its thread of the pool is the process's), then load again
    const release = openSync(fifo.path, 'w');
    closeSync(release);
    const built = await builder.load(v1);
    assert.equal(built.messages, 1);
    await builder.close();
  } finally {
    await store.close();
    dir.cleanup();
  }
});
