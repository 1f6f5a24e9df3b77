import type { OrgData } from '../model/records.js';
import type { FlatIndex } from './flat-index.js';

/** Options of loadFlatIndex. */
export interface LoadFlatOptions {
  /**
   * false: an older snapshot that needs its index built (format 1) is refused with an
   * OlderFormatError before its chunks are read, so the caller can build it elsewhere (a worker)
   */
  build?: boolean;
}

/** Thrown by loadFlatIndex(ref, { build: false }) for a snapshot whose index must be built. */
export class OlderFormatError extends Error {}

/** Options of publishSnapshot. */
export interface PublishOptions {
  /** snapshot format to write: 2 (default, the built index) or 1 (the older record columns, for tests and downgrades) */
  format?: 1 | 2;
}

/** A stored API key (CONTRACT 7). The secret itself is never stored, only its SHA-256 hex digest. */
export interface KeyRecord {
  prefix: string;
  name: string;
  /** hex SHA-256 of the secret part */
  hash: string;
  organization_ids: string[];
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** Pointer to one published snapshot of one organization. */
export interface SnapshotRef {
  organizationId: string;
  /** monotonically increasing per organization */
  version: number;
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

/** A running server, as registered for cross-process reload (`npm run reload`). */
export interface ServerEntry {
  /** random, unique per process start */
  id: string;
  pid: number;
  hostname: string;
  /** base URL of the admin listener (`http://127.0.0.1:9464`), or null when there is none */
  adminUrl: string | null;
  startedAt: string;
  /** epoch ms of the last heartbeat; an entry older than its TTL is dead */
  heartbeatAt: number;
}

/** A request to reload, broadcast to every server (Redis pub/sub). */
export interface ReloadRequest {
  requestId: string;
  /** null: every organization */
  organizationId: string | null;
}

/** What one server answers to a ReloadRequest: the Catalog's summary, or the error that stopped it. */
export type ReloadAck = { ok: true; summary: unknown } | { ok: false; error: string };

/**
 * A broadcast channel for reload requests with acknowledgements. Only stores shared across hosts
 * have one (Redis); with the embedded store the reload CLI calls each server's admin URL instead.
 * Broadcasts are fire-and-forget: a subscriber that is disconnected misses them, so servers also
 * poll `latest()` and the CLI re-sends the request until every live server acked.
 */
export interface ReloadSignals {
  /** Subscribes; `onReady` runs on every (re)connection, a hint that broadcasts may have been missed. Resolves once subscribed, to an unsubscribe function. */
  subscribe(onRequest: (req: ReloadRequest) => void, onReady: () => void): Promise<() => Promise<void>>;
  publish(req: ReloadRequest): Promise<void>;
  putAck(requestId: string, serverId: string, ack: ReloadAck): Promise<void>;
  /** Acks received so far, by server id. */
  acks(requestId: string): Promise<Map<string, ReloadAck>>;
}

/**
 * The one interface both backends (embedded files, Redis) implement; the rest of the code never
 * knows which it has. Every method rejects with an Error whose message starts with "store:".
 */
export interface Store {
  readonly kind: 'embedded' | 'redis';
  /** Publishes atomically: after it resolves, latest() names the new version; a failure changes nothing visible. */
  publishSnapshot(data: OrgData, options?: PublishOptions): Promise<SnapshotRef>;
  /** Newest published version of every organization; rejects when any pointer is unreadable (the CLIs' strict view). */
  latest(): Promise<SnapshotRef[]>;
  /**
   * Newest published version of every organization, one organization's bad pointer reported
   * apart instead of failing the listing. Rejects only when the store itself cannot be read.
   * Cheap enough to poll every second.
   */
  listLatest(): Promise<LatestListing>;
  /** Reads and verifies (format version, checksum) one snapshot; rejects clearly when corrupt. */
  loadSnapshot(ref: SnapshotRef): Promise<OrgData>;
  /**
   * Reads and verifies one snapshot as the index to serve: a format-2 snapshot's sections as
   * stored (in SharedArrayBuffers), a format-1 snapshot's index built from its records.
   */
  loadFlatIndex(ref: SnapshotRef, options?: LoadFlatOptions): Promise<FlatIndex>;

  putKey(record: KeyRecord): Promise<void>;
  getKey(prefix: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Returns false when there is no such key. */
  revokeKey(prefix: string, at: string): Promise<boolean>;
  /** Best-effort, batched: last_used_at of several keys. */
  touchKeys(lastUsed: Map<string, string>): Promise<void>;

  /** Registers or refreshes (heartbeat) a running server; the entry dies `ttlMs` after the last call. */
  registerServer(entry: ServerEntry, ttlMs: number): Promise<void>;
  unregisterServer(id: string): Promise<void>;
  /** Servers whose entry is alive (dead ones are dropped as a side effect). */
  listServers(): Promise<ServerEntry[]>;
  /** Reload broadcast, or null when the reload CLI must call each server's admin URL (embedded). */
  readonly signals: ReloadSignals | null;
  /** The environment (REDIS_URL / DATA_DIR) that makes `openStore` open this same store, e.g. in a worker thread. */
  reopenEnv?(): NodeJS.ProcessEnv;

  close(): Promise<void>;
}
