import { parentPort } from 'node:worker_threads';
import v8 from 'node:v8';
import { wrapIndex } from '../src/store/flat-index.ts';
const used = () => v8.getHeapStatistics().used_heap_size / 2 ** 20;
const rStart = process.memoryUsage().rss / 2 ** 20; const hStart = used();
parentPort!.once('message', async (flats: any[]) => {
  const rRecv = process.memoryUsage().rss / 2 ** 20; const hRecv = used(); console.log('recv: rss +' + (rRecv - rStart).toFixed(1) + ' MiB, heap +' + (hRecv - hStart).toFixed(1));
  const gc = () => { try { (globalThis as any).gc?.(); } catch {} };
  gc();
  const h0 = used(), r0 = process.memoryUsage().rss / 2 ** 20;
  const keep = flats.map((f) => wrapIndex(f));
  (globalThis as any).keep = keep;
  await new Promise((r) => setTimeout(r, 300));
  gc();
  const h1 = used(), r1 = process.memoryUsage().rss / 2 ** 20;
  parentPort!.postMessage({ done: true, heapMiB: +(h1 - h0).toFixed(2), perOrgKB: +(((h1 - h0) * 1024) / flats.length).toFixed(1), rssNote: +(r1 - r0).toFixed(1) });
});
