/**
 * Profiling aid (not part of `npm run bench`): loads every organization's newest snapshot from a
 * store, wraps each index as a serving thread does, and times `searchBody` round robin over them,
 * as a shard of many organizations is queried: the query code then meets a different index at
 * every call, which a bench over one organization never shows (megamorphic property loads,
 * caches cold). One organization's store times that organization alone.
 *
 * Run: node --import tsx bench/round-robin.ts DATA_DIR [--q 'q=de'] [--seconds 2] [--rounds 5]
 * (REDIS_URL set: the Redis store, as the server picks it)
 */
import { openStores } from '../src/store/open-store.js';
import { lazyIndex } from '../src/store/flat-index.js';
import { searchBody } from '../src/query/execute.js';
import { parseSearchParams } from '../src/request/parse-params.js';
import { flagNumber, flagString, redisUrlFromEnv } from './helpers.js';

const dataDir = process.argv[2];
if (dataDir === undefined || dataDir.startsWith('--')) throw new Error('round-robin: give DATA_DIR first');
const query = flagString('q', 'q=de');
const seconds = flagNumber('seconds', 2);
const rounds = flagNumber('rounds', 5);
const stores = await openStores({ redisUrl: redisUrlFromEnv(), dataDir });
const indexes = [];
try {
  for (const ref of await stores.snapshots.latest()) {
    // as the main thread loads it (a small organization's per-key columns narrowed), then wrapped
    indexes.push(lazyIndex(await stores.snapshots.loadFlatIndex(ref, { build: false })).index);
  }
} finally {
  await stores.close();
}
if (indexes.length === 0) throw new Error(`round-robin: no snapshot in ${dataDir}`);
const requests = indexes.map((index) => {
  const parsed = parseSearchParams(`organization_id=${index.organizationId}&${query}`);
  if (!parsed.ok) throw new Error(`round-robin: --q ${JSON.stringify(query)}: ${JSON.stringify(parsed.details)}`);
  return parsed.request;
});
const perCall: string[] = [];
for (let r = 0; r < rounds; r++) {
  const start = performance.now();
  const end = start + seconds * 1000;
  let n = 0;
  while (performance.now() < end) {
    for (let k = 0; k < 100; k++, n++) {
      const i = n % indexes.length;
      searchBody(indexes[i], requests[i]);
    }
  }
  perCall.push((((performance.now() - start) * 1000) / n).toFixed(2));
}
const rss = (process.memoryUsage().rss / 1048576).toFixed(1);
console.log(
  `${query} round robin over ${indexes.length} organizations: ${perCall.join(' / ')} µs a call (RSS ${rss} MiB)`,
);
