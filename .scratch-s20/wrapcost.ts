// per-thread cost of wrapping N loaded indexes: load flats in main, post to a worker which wraps them
import { startModuleWorker } from '../src/runtime/module-worker.ts';
import { EmbeddedStore } from '../src/store/embedded-store.ts';
const store = await new EmbeddedStore(process.argv[2]).open();
const { refs } = await store.snapshots.listLatest();
const flats = [];
import { deriveDictionaries } from '../src/store/flat-index.ts';
for (const r of refs) { const f = await store.snapshots.loadFlatIndex(r); deriveDictionaries(f); flats.push(f); }
(globalThis as any).gc?.();
console.log(`main: ${flats.length} flats, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB`);
const w = startModuleWorker(import.meta.url, 'wrapcost-worker', {});
w.on('message', (m) => { console.log('worker:', m); if (m.done) process.exit(0); });
w.postMessage(flats);
