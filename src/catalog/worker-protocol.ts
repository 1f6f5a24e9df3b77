/**
 * Messages between the Catalog's IndexBuilder and its build worker (build-worker.ts).
 *
 * The index travels as a FlatIndex (src/store/flat-index.ts): its sections sit in
 * SharedArrayBuffers, so posting them shares the memory (no copy, no transfer); the contacts and
 * scalars are structured-cloned. The worker has derived its dictionary lookup sections; the
 * request thread only wraps it.
 */
import type { FlatIndex } from '../store/flat-index.js';
import type { SnapshotRef } from '../store/snapshot-store.js';

export interface WorkerRequest {
  id: number;
  ref: SnapshotRef;
  /** the digest of the index in service (LoadFlatOptions.unchanged) */
  unchanged?: string;
}

export type WorkerReply =
  | { id: number; kind: 'done'; flat: FlatIndex }
  /** the snapshot's content is the index in service (verified, not copied) */
  | { id: number; kind: 'unchanged' }
  | { id: number; kind: 'error'; message: string };
