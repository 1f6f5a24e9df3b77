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
let collector: (() => void) | null = null;
let scheduled: NodeJS.Timeout | null = null;
// Later rather than now: the caller's own frame (the Catalog's load loop, a serving thread's
// message handler) still references the replaced index, so a collection at once would find it alive.
const COLLECT_AFTER_MS = 200;
export function collectGarbage(): void {
  if (collector === null) {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as (o?: object) => void;
    // gc() without options: gc({ type: 'major' }) measured as not releasing the old sections on
    // this Node (RSS +240 MB a reload at 1M), a plain gc() does (RSS flat over 20 reloads).
    collector = () => gc();
  }
  if (scheduled !== null) return;
  scheduled = setTimeout(() => {
    scheduled = null;
    collector!();
  }, COLLECT_AFTER_MS).unref();
}
