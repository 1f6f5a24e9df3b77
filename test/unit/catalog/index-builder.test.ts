/**
 * A snapshot read as stored hands its shared sections on with the index: the serving threads
 * are posted these same SharedArrayBuffers, not a copy (a copy cost 1.8x RSS with 2 threads).
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { IndexBuilder } from '../../../src/catalog/index-builder.js';
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
