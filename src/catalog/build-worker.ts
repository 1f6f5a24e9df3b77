/**
 * The worker thread that loads and verifies one snapshot off the request path: a format-2
 * snapshot's sections are copied once into shared memory; a format-1 (older) snapshot's index is
 * built here from its record columns. Started by IndexBuilder (index-builder.ts) with
 * `workerData.store`, the validated store part of the configuration, which it opens once and
 * keeps. See worker-protocol.ts for the messages.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { deriveDictionaries } from '../store/flat-index.js';
import { openStores } from '../store/open-store.js';
import type { SnapshotRef } from '../store/snapshot-store.js';
import type { StoreConfig, Stores } from '../store/stores.js';
import type { WorkerReply, WorkerRequest } from './worker-protocol.js';

/**
 * Nice value of this thread: a reload's read, verify and copy yield the CPU to the threads that
 * answer requests. On Linux the nice value is per thread and pid 0 names the calling thread, so
 * only this worker is lowered; a serving thread woken on the core it runs on then preempts it at
 * once instead of waiting out its time slice. Where that is not allowed, loads keep the
 * process's priority.
 */
const LOADER_NICE = 10;
try {
  setPriority(0, LOADER_NICE);
} catch {
  // not permitted here: loads run at the process's priority
}

const port = parentPort!;
const config = (workerData as { store: StoreConfig }).store;
let stores: Promise<Stores> | null = null;

async function handle(id: number, ref: SnapshotRef, unchanged: string | undefined): Promise<void> {
  // (it only reads: a DATA_DIR mounted read-only still serves reloads)
  stores ??= openStores(config, undefined, 'read').catch((err: unknown) => {
    stores = null;
    throw err;
  });
  const flat = await (await stores).snapshots.loadChangedFlatIndex(ref, unchanged);
  if (flat === null) {
    port.postMessage({ id, kind: 'unchanged' } satisfies WorkerReply);
    return;
  }
  // the dictionaries' lookup sections are derived here, off the threads that answer requests
  deriveDictionaries(flat);
  port.postMessage({ id, kind: 'done', flat } satisfies WorkerReply);
}

port.on('message', (req: WorkerRequest) => {
  handle(req.id, req.ref, req.unchanged).catch((err: unknown) => {
    port.postMessage({
      id: req.id,
      kind: 'error',
      message: (err as Error)?.message ?? String(err),
    } satisfies WorkerReply);
  });
});
