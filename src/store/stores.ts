/**
 * One opened store: the three concerns it serves, over one connection (Redis) or one folder
 * (embedded). Consumers take only the part they use: the Catalog the snapshots and the fleet,
 * the KeyCache the keys, the CLIs one each. A backend may implement any one of the interfaces
 * alone; this bundle only shares what opening and closing cost.
 */
import type { Fleet } from './fleet.js';
import type { KeyStore } from '../auth/key-store.js';
import type { SnapshotStore } from './snapshot-store.js';

export interface Stores {
  readonly kind: 'embedded' | 'redis';
  readonly snapshots: SnapshotStore;
  readonly keys: KeyStore;
  readonly fleet: Fleet;
  /**
   * REDIS_URL as another connection should use it now (Redis Cluster: the configured seeds and
   * every node this connection has discovered since), or null to use the configured one. A worker
   * connecting later from the configured seeds alone failed for good once they were down.
   */
  currentRedisUrl?(): string | null;
  close(): Promise<void>;
}

/** Which store to open (CONTRACT 8): `redisUrl` set means Redis, else files under `dataDir`. Part of the validated Config. */
export interface StoreConfig {
  /** REDIS_URL: one URL, or a comma-separated list of cluster seed nodes; null for the embedded store */
  redisUrl: string | null;
  /** DATA_DIR: the embedded store's folder */
  dataDir: string;
}

/**
 * How old a listing a poller may skip re-reading while the store's change token (pointers) or
 * counter (keys) is the same: a change made by other means (a hand edit) is seen within it.
 */
export const FULL_LISTING_MS = 30_000;

/** What a process opens a store for: 'read' (a tool that only lists) or 'write' (the rest). */
export type StoreAccess = 'read' | 'write';
