/**
 * Messages between the Catalog's IndexBuilder and its build worker (build-worker.ts).
 *
 * The OrgIndex travels field by field, whatever its fields are (the index layout belongs to
 * src/index and changes on its own): typed arrays are transferred without a copy; big arrays come
 * in slices; a Map whose values are 0..n-1 in insertion order (tokenIds) comes as its keys only,
 * in slices, and is rebuilt; anything else is structured-cloned with the final message.
 */
import type { SnapshotRef } from '../store/store.js';

export interface WorkerRequest {
  id: number;
  ref: SnapshotRef;
}

/** How one field of the index travels. */
export type FieldKind = 'value' | 'typed' | 'array' | 'seqmap' | 'map';

export type WorkerReply =
  /** a slice of an 'array' field (values), of a 'seqmap' (keys) or of a 'map' (entries) */
  | { id: number; kind: 'slice'; field: string; start: number; length: number; values: unknown[] }
  | {
    id: number;
    kind: 'done';
    messages: number;
    contacts: number;
    /** every field of the index, in its key order, with how it travels */
    fields: [string, FieldKind][];
    /** the 'value' and 'typed' fields */
    values: Record<string, unknown>;
  }
  | { id: number; kind: 'error'; message: string };
