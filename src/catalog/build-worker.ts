/**
 * The worker thread that loads, verifies and decodes one snapshot and builds its index, off the
 * request path. Started by IndexBuilder (index-builder.ts) with `workerData.env` naming the store
 * (REDIS_URL / DATA_DIR), which it opens once and keeps. See worker-protocol.ts for the messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { buildIndex } from '../index/build.js';
import { openStore } from '../store/open-store.js';
import type { SnapshotRef, Store } from '../store/store.js';
import type { FieldKind, WorkerReply, WorkerRequest } from './worker-protocol.js';

// Slices of this many entries: each deserializes on the main thread in a few milliseconds.
const SLICE = 20_000;

const port = parentPort!;
const env = (workerData as { env: NodeJS.ProcessEnv }).env;
let store: Promise<Store> | null = null;

function post(reply: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(reply, transfer);
}

function sendSlices(id: number, field: string, values: readonly unknown[]): void {
  for (let start = 0; start < values.length; start += SLICE) {
    post({ id, kind: 'slice', field, start, length: values.length, values: values.slice(start, start + SLICE) });
  }
  if (values.length === 0) post({ id, kind: 'slice', field, start: 0, length: 0, values: [] });
}

/** True when the Map's values are 0, 1, 2, ... in insertion order: its keys alone rebuild it. */
function isSequential(map: Map<unknown, unknown>): boolean {
  let i = 0;
  for (const v of map.values()) if (v !== i++) return false;
  return true;
}

async function handle(id: number, ref: SnapshotRef): Promise<void> {
  store ??= openStore(env).catch((err: unknown) => { store = null; throw err; });
  const data = await (await store).loadSnapshot(ref);
  const messages = data.messages.count, contacts = data.contacts.length;
  const index = buildIndex(data) as unknown as Record<string, unknown>;
  const fields: [string, FieldKind][] = [];
  const values: Record<string, unknown> = {};
  const transfer = new Set<ArrayBuffer>();
  for (const [field, v] of Object.entries(index)) {
    if (ArrayBuffer.isView(v)) {
      fields.push([field, 'typed']);
      values[field] = v;
      // Only whole, unshared buffers move; a view into something bigger is copied.
      if (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer) transfer.add(v.buffer);
    } else if (v instanceof Map && isSequential(v)) {
      fields.push([field, 'seqmap']);
      sendSlices(id, field, [...v.keys()]);
    } else if (v instanceof Map) {
      fields.push([field, 'map']);
      sendSlices(id, field, [...v.entries()]);
    } else if (Array.isArray(v) && v.length > SLICE) {
      fields.push([field, 'array']);
      sendSlices(id, field, v);
    } else {
      fields.push([field, 'value']);
      values[field] = v;
    }
  }
  post({ id, kind: 'done', messages, contacts, fields, values }, [...transfer]);
}

port.on('message', (req: WorkerRequest) => {
  handle(req.id, req.ref).catch((err: unknown) => {
    post({ id: req.id, kind: 'error', message: (err as Error)?.message ?? String(err) });
  });
});
