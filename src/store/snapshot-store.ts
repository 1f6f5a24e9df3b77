/** Where published snapshots live: one interface, implemented over files and over Redis. */
import type { OrgData } from '../model/records.js';
import type { FlatIndex } from './flat-index.js';

/** Options of loadFlatIndex. */
export interface LoadFlatOptions {
  /**
   * false: an older snapshot that needs its index built (format 1) is refused with an
   * OlderFormatError before its chunks are read, so the caller can build it elsewhere (a worker)
   */
  build?: boolean;
  /**
   * The digest (FlatIndex.digest) of the index in service for this organization: a snapshot with
   * that same digest is verified but not copied (loadChangedFlatIndex gives null).
   */
  unchanged?: string;
}

/** Thrown by loadFlatIndex(ref, { build: false }) for a snapshot whose index must be built. */
export class OlderFormatError extends Error {}

/** Options of publishSnapshot. */
export interface PublishOptions {
  /** snapshot format to write: 2 (default, the built index) or 1 (the older record columns, for tests and downgrades) */
  format?: 1 | 2;
  /**
   * The caller gives the messages' strings up (the import, which never reads them again): the
   * build empties each once it is copied into the index, so the collections the build's large
   * typed arrays trigger mark a small heap (1M import: mark-compact 1.2 -> 0.7 s, peak RSS
   * 750 -> 590 MB). Format 2 only; `data` keeps its counts and numeric columns.
   */
  consumeText?: boolean;
}

/**
 * Whether a pointer's version can be followed: a safe integer from 1. Anything else is an
 * unreadable pointer on both stores (listed apart, replaced by the next publish, and its versions
 * left alone by the Redis sweep; the Redis switch script repeats this test in Lua).
 */
export function isVersion(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 1;
}

/** Pointer to one published snapshot of one organization. */
export interface SnapshotRef {
  organizationId: string;
  /** monotonically increasing per organization */
  version: number;
  /**
   * Which publish of this version, when the store can tell (the embedded store's pointer): its
   * versions start at 1 again in an organization folder removed and made anew, so a listing's
   * version alone could name a snapshot other than the one a server holds under that number.
   */
  stamp?: string;
}

/** A snapshot written and not yet published (SnapshotStore.stageSnapshot). */
export interface StagedSnapshot {
  readonly ref: SnapshotRef;
  /** Moves the organization's pointer to it (rejects, and removes it, when a newer one was published meanwhile). */
  commit(): Promise<void>;
  /** Removes it, best effort (never rejects): what is left is cleaned up by the next publish. */
  discard(): Promise<void>;
}

/** An organization whose pointer could not be read (corrupt, unreadable): listed apart, never fatal to the others. */
export interface UnreadablePointer {
  organizationId: string;
  /** "store: ..." sentence naming the organization and the cause */
  error: string;
}

/** What `listLatest()` found: the organizations whose pointer reads, and those whose pointer does not. */
export interface LatestListing {
  refs: SnapshotRef[];
  unreadable: UnreadablePointer[];
}

/**
 * Published snapshots, one version chain per organization. Every method rejects with an Error
 * whose message starts with "store:" (or "snapshot:" for a corrupt snapshot).
 */
export interface SnapshotStore {
  /** Publishes atomically: after it resolves, latest() names the new version; a failure changes nothing visible. */
  publishSnapshot(data: OrgData, options?: PublishOptions): Promise<SnapshotRef>;
  /**
   * publishSnapshot's first part: the snapshot written under a new version that no reader sees
   * until commit() moves the pointer to it. A failure leaves nothing visible. An import stages
   * every organization before it commits any, so a failure while writing publishes nothing.
   */
  stageSnapshot(data: OrgData, options?: PublishOptions): Promise<StagedSnapshot>;
  /** Newest published version of every organization; rejects when any pointer is unreadable (the CLIs' strict view). */
  latest(): Promise<SnapshotRef[]>;
  /**
   * Newest published version of every organization, one organization's bad pointer reported
   * apart instead of failing the listing. Rejects only when the store itself cannot be read.
   * Cheap enough to poll every second.
   */
  listLatest(): Promise<LatestListing>;
  /**
   * Optional: a token that changes whenever a pointer moves (every commit changes it), so that a
   * poll can skip listLatest while it is the same. The embedded store's listing reads every
   * organization's pointer: 0.9 s of CPU at 10,000 organizations, every second.
   */
  changeToken?(): Promise<string>;
  /** Reads and verifies (format version, checksum) one snapshot; rejects clearly when corrupt. */
  loadSnapshot(ref: SnapshotRef): Promise<OrgData>;
  /**
   * Reads and verifies one snapshot as the index to serve: a format-2 snapshot's sections as
   * stored (in SharedArrayBuffers), a format-1 snapshot's index built from its records.
   */
  loadFlatIndex(ref: SnapshotRef, options?: LoadFlatOptions): Promise<FlatIndex>;
  /**
   * loadFlatIndex, or null when the snapshot's content is the index whose digest is `unchanged`
   * (a re-import of the same data): its chunks are read and verified, nothing is allocated. A
   * reload of unchanged data then costs no memory and no copy, and still refuses a corrupt one.
   */
  loadChangedFlatIndex(
    ref: SnapshotRef,
    unchanged: string | undefined,
    options?: LoadFlatOptions,
  ): Promise<FlatIndex | null>;
}

/** publishSnapshot of either store: stage, then commit (a failure in either leaves nothing visible). */
export async function publishStaged(
  store: Pick<SnapshotStore, 'stageSnapshot'>,
  data: OrgData,
  options?: PublishOptions,
): Promise<SnapshotRef> {
  const staged = await store.stageSnapshot(data, options);
  await staged.commit();
  return staged.ref;
}
