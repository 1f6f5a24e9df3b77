/**
 * The worker thread that loads and verifies one snapshot off the request path: a format-2
 * snapshot's sections are copied once into shared memory; a format-1 (older) snapshot's index is
 * built here from its record columns. Started by IndexBuilder (index-builder.ts) with
 * `workerData.env` naming the store (REDIS_URL / DATA_DIR), which it opens once and keeps. See
 * worker-protocol.ts for the messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStore } from '../store/open-store.js';
import type { SnapshotRef, Store } from '../store/store.js';
import type { WorkerReply, WorkerRequest } from './worker-protocol.js';

const port = parentPort!;
const env = (workerData as { env: NodeJS.ProcessEnv }).env;
let store: Promise<Store> | null = null;

async function handle(id: number, ref: SnapshotRef): Promise<void> {
  store ??= openStore(env).catch((err: unknown) => {
    store = null;
    throw err;
  });
  const flat = await (await store).loadFlatIndex(ref);
  port.postMessage({ id, kind: 'done', flat } satisfies WorkerReply);
}

port.on('message', (req: WorkerRequest) => {
  handle(req.id, req.ref).catch((err: unknown) => {
    port.postMessage({
      id: req.id,
      kind: 'error',
      message: (err as Error)?.message ?? String(err),
    } satisfies WorkerReply);
  });
});
