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
  if (collector === null) {
    v8.setFlagsFromString('--expose-gc');
    collector = vm.runInNewContext('gc') as (o?: object) => void;
  }
  if (scheduled !== null) return;
  scheduled = setTimeout(() => {
    scheduled = null;
    if (mode === 'background') collector!({ type: 'major', execution: 'async' });
    else collector!();
  }, COLLECT_AFTER_MS).unref();
}
