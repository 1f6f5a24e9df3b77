/**
 * SHA-256 of every section of each organization's newest snapshot, and of them all: a change to
 * the build or the import that should not change the index (a faster pass, a new writer) is
 * checked by hashing a snapshot published before it and one published after. Either store, as
 * the server picks it (REDIS_URL set: Redis). The snapshot's file or keys also hold `createdAt`
 * and a manifest CRC, so compare these hashes, not the files.
 *
 * Run: node --import tsx bench/index-hash.ts DATA_DIR [--sections]
 */
import { createHash } from 'node:crypto';
import { openStores } from '../src/store/open-store.js';
import { redisUrlFromEnv } from './helpers.js';

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('index-hash: give DATA_DIR (ignored when REDIS_URL is set)');
const perSection = process.argv.includes('--sections');
const stores = await openStores({ redisUrl: redisUrlFromEnv(), dataDir });
try {
  for (const ref of await stores.snapshots.latest()) {
    const flat = await stores.snapshots.loadFlatIndex(ref, { build: false });
    const all = createHash('sha256');
    // by name (a default sort of [name, section] pairs would turn every section into a string)
    const names = Object.keys(flat.sections).sort();
    for (const name of names) {
      const a = flat.sections[name];
      const hash = createHash('sha256')
        .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
        .digest('hex');
      all.update(`${name} ${hash}\n`);
      if (perSection) console.log(`  ${name} ${hash.slice(0, 16)}`);
    }
    console.log(`${ref.organizationId} v${ref.version}: ${all.digest('hex').slice(0, 16)} (${names.length} sections)`);
  }
} finally {
  await stores.close();
}
