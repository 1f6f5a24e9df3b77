/**
 * The Redis store (ioredis): snapshots (redis-snapshot-store.ts), keys (redis-key-store.ts) and
 * the server registry with its reload broadcast (redis-fleet.ts) over one connection
 * (redis-connection.ts), to one node or a Redis Cluster.
 *
 * Commands never queue while disconnected and time out: a dead Redis gives a clear
 * "store: redis unavailable at <url>" error at once instead of a hang. On a cluster, keys of
 * different slots are never used in one command, MULTI or pipeline (CROSSSLOT); they go out as
 * separate commands, which the cluster client batches per node.
 */
import { type RedisClient, type RedisConnectOptions, RedisConnection } from './redis-connection.js';
import { RedisFleet } from './redis-fleet.js';
import { RedisKeyStore } from './redis-key-store.js';
import { RedisSnapshotStore } from './redis-snapshot-store.js';
import type { Stores } from './stores.js';

/** The three stores over one Redis connection. Create with `RedisStore.connect`. */
export class RedisStore implements Stores {
  readonly kind = 'redis' as const;
  readonly snapshots: RedisSnapshotStore;
  readonly keys: RedisKeyStore;
  readonly fleet: RedisFleet;
  private readonly conn: RedisConnection;

  private constructor(conn: RedisConnection) {
    this.conn = conn;
    this.snapshots = new RedisSnapshotStore(conn);
    this.keys = new RedisKeyStore(conn);
    this.fleet = new RedisFleet(conn);
  }

  /** Connects; rejects with "store: redis unavailable at <url>: ..." when Redis cannot be reached. */
  static async connect(url: string, options: RedisConnectOptions = {}): Promise<RedisStore> {
    return new RedisStore(await RedisConnection.open(url, options));
  }

  currentRedisUrl(): string | null {
    return this.conn.currentUrl();
  }

  /** Whether the connection is up now. */
  get connected(): boolean {
    return this.conn.connected;
  }

  /** The underlying connection, for tests. */
  get client(): RedisClient {
    return this.conn.client;
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}
