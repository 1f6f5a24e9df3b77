import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * A full collection on request. An index's sections live in SharedArrayBuffers, whose memory V8
 * does not count as pressure on the heap that holds them: a replaced index's hundreds of MB would
 * otherwise stay mapped until some unrelated collection (measured: RSS +60 MB a reload). The
 * memory of a SharedArrayBuffer is given back once no thread holds it: the main thread and every
 * serving thread call this after a swap (measured with 2 threads at 1M, without it in the
 * threads: RSS 410 MB steady, 992 MB after 7 reloads).
 */
let collector: ((o?: object) => void) | null = null;
let scheduled: NodeJS.Timeout | null = null;
// Later rather than now: the caller's own frame (the Catalog's load loop, a serving thread's
// message handler) still references the replaced index, so a collection at once would find it alive.
const COLLECT_AFTER_MS = 200;
/**
 * `'now'`: a full stop-the-world collection (the main thread: gc({ type: 'major' }) measured as not
 * releasing the old sections on this Node, RSS +240 MB a reload at 1M; a plain gc() does).
 * `'background'`: a major collection run concurrently (a serving thread, whose requests a 10-20 ms
 * pause would hold up; measured: RSS flat over reloads too, 400-422 MiB over 8 at 1M with 2 threads).
 */
export function collectGarbage(mode: 'now' | 'background' = 'now'): void {
  if (scheduled !== null) return;
  scheduled = setTimeout(() => {
    scheduled = null;
    if (mode === 'background') gcFunction()({ type: 'major', execution: 'async' });
    else gcFunction()();
  }, COLLECT_AFTER_MS).unref();
}

/** How long shrinkHeap waits for the inspector's collection before going on without it. */
const SHRINK_WAIT_MS = 2000;

/**
 * A full collection that also gives the young generation's grown semi-spaces back: what V8's
 * memory reducer does on its own, but only ~8 s after the last full collection. Loading modules
 * and snapshots at the start grows the young generation to 8 MB, all of it touched: RSS at ready
 * sat 4-5 MiB above the settled figure for those 8 s (bench/RESULTS.md, session 31). A plain gc()
 * keeps the young generation at its size (V8 shrinks it only under memory pressure, or when the
 * last 5 s allocated little). The inspector's HeapProfiler.collectGarbage (DevTools' "collect
 * garbage") is V8's low-memory collection, which does shrink it; it runs as a task of the thread,
 * so this resolves once it has run. An in-process session opens no port. Without an inspector
 * (a Node built without one), or if it does not answer in SHRINK_WAIT_MS, a plain gc() is run.
 */
export async function shrinkHeap(): Promise<void> {
  let session: import('node:inspector').Session;
  try {
    const { Session } = await import('node:inspector');
    session = new Session();
    session.connect();
  } catch {
    collectNow();
    return;
  }
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      collectNow();
      resolve();
    }, SHRINK_WAIT_MS);
    session.post('HeapProfiler.collectGarbage', (err) => {
      clearTimeout(timer);
      if (err) collectNow();
      resolve();
    });
  });
  // (not from the post's callback: a disconnect there never returned, measured)
  setImmediate(() => session.disconnect());
}

function collectNow(): void {
  gcFunction()();
}

function gcFunction(): (o?: object) => void {
  if (collector === null) {
    v8.setFlagsFromString('--expose-gc');
    collector = vm.runInNewContext('gc') as (o?: object) => void;
  }
  return collector;
}
