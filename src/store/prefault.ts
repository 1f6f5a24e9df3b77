/**
 * First touch of a large load's shared memory, from a second thread.
 *
 * On the VMs we run on, a fresh 4 KiB page costs ~12 µs at its first write (the guest's fault
 * and the host's): at 10M messages the 1.9 GB of sections cost ~6 s of a ~10 s cold start in
 * faults alone, all taken by the thread that copies the chunks in (bench/RESULTS.md, sessions 31
 * and 32). A worker thread touching the same buffer from its end backwards takes half of them on
 * the other core while the copy goes on from the start.
 *
 * The touch is `Atomics.compareExchange(word, 0, 0)`: it writes (so the page is made present and
 * private) but only a zero over a zero, atomically, so it never overwrites a byte the copy put
 * there first. Pages the copy already reached cost it ~20 ns each to pass over.
 *
 * Two ways, both from the end of the buffer backwards:
 * - a thread that exists anyway: while the server starts, its first serving thread (SERVER_THREADS
 *   > 1) takes the touching of buffers of HELPER_MIN_BYTES or more (prefaultDuringStart), in slices
 *   between which it answers its requests (touchPages). At 1M (180 MiB of sections) the start is
 *   ~0.3 s shorter, at no memory cost;
 * - a worker of its own, for buffers of PREFAULT_MIN_BYTES or more that no helper took: its start
 *   (~30 ms) and the ~1.5 MiB its thread leaves behind (measured at 1M) are worth it only there.
 *
 * Both only while the server starts (prefaultDuringStart, main.ts), when nothing is served yet.
 * A later load (a reload, in the build worker) does without: there the touching would take a
 * core from the threads answering searches, for a load nobody waits on.
 */
import { Worker } from 'node:worker_threads';

export const PREFAULT_MIN_BYTES = 512 * 1024 * 1024;
export const HELPER_MIN_BYTES = 64 * 1024 * 1024;

/**
 * Asks a running thread to touchPages(buffer, stop): false when it cannot (no such thread).
 * `stop` [0] becomes 1 when the touching is no longer wanted.
 */
export type PrefaultHelper = (buffer: SharedArrayBuffer, stop: Int32Array) => boolean;

let helper: PrefaultHelper | null = null;
let atStart = false;

/**
 * Lets this thread's loads prefault from now on, with `h` (when given) taking the touching of large
 * buffers, until the returned function is called: the server's start, up to its first loads' end.
 */
export function prefaultDuringStart(h: PrefaultHelper | null): () => void {
  atStart = true;
  helper = h;
  return () => {
    atStart = false;
    helper = null;
  };
}

let minBytes = PREFAULT_MIN_BYTES;

/** Sets the size from which loads prefault (tests: every load). */
export function setPrefaultMinBytes(bytes: number): void {
  minBytes = bytes;
}

/**
 * Touches up to `pages` pages of `words` (4 KiB each) from word `i` down, returning where the next
 * touch would be (below 0: done). Self-contained, with no name from this module: the dedicated
 * worker runs its source text (TOUCHER), so both ways run this one loop.
 */
function touchDown(words: Int32Array, i: number, pages: number): number {
  for (let k = 0; k < pages && i >= 0; k++, i -= 1024) Atomics.compareExchange(words, i, 0, 0);
  return i;
}

/** The word of the last page's first word: where touchDown starts. */
function lastPageWord(words: Int32Array): number {
  return words.length - (words.length % 1024 || 1024);
}

// CommonJS, evaluated: no module file to find beside a bundle or under tsx
const TOUCHER = `
const { workerData, parentPort } = require('node:worker_threads');
const words = new Int32Array(workerData.buffer);
(${touchDown.toString()})(words, workerData.from, Infinity);
parentPort.postMessage('done');
`;

/** A toucher at work; stop() ends it (a load that failed, or finished first). */
export interface Prefault {
  stop(): void;
  /** settles when the worker has touched every page, or was stopped, or failed (not for a helper) */
  readonly ended?: Promise<void>;
}

// Pages touched between two turns of the helper's event loop: ~6 ms of faults on the VM measured.
const SLICE_PAGES = 512;

/**
 * Touches every page of `buffer` from its end, SLICE_PAGES at a time with the event loop free in
 * between, until done or `stop` [0] is set. What a helper thread runs.
 */
export async function touchPages(buffer: SharedArrayBuffer, stop: Int32Array): Promise<void> {
  const words = new Int32Array(buffer);
  for (let i = lastPageWord(words); i >= 0 && Atomics.load(stop, 0) === 0; ) {
    i = touchDown(words, i, SLICE_PAGES);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Starts touching `buffer` from its end in a worker thread, or returns null (too small, or the
 * worker could not start: the copy then takes every fault itself, as before).
 */
export function prefaultShared(buffer: SharedArrayBuffer): Prefault | null {
  if (!atStart) return null;
  if (helper !== null && buffer.byteLength >= Math.min(HELPER_MIN_BYTES, minBytes)) {
    const stop = new Int32Array(new SharedArrayBuffer(4));
    if (helper(buffer, stop)) return { stop: () => Atomics.store(stop, 0, 1) };
  }
  if (buffer.byteLength < minBytes || buffer.byteLength < 4) return null;
  let worker: Worker;
  try {
    worker = new Worker(TOUCHER, {
      eval: true,
      workerData: { buffer, from: lastPageWord(new Int32Array(buffer)) },
      // it allocates nothing: the smallest heap V8 takes
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8 },
      stdout: false,
      stderr: false,
    });
  } catch {
    return null;
  }
  worker.unref();
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    void worker.terminate().catch(() => undefined);
  };
  // a worker that fails only loses the head start; its error must not become an uncaught one
  worker.on('error', stop);
  worker.on('message', stop);
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return { stop, ended };
}
