/** The running servers and how to reach them for a reload: one interface, implemented over files and over Redis. */

/** A running server, as registered for cross-process reload (`npm run reload`). */
export interface ServerEntry {
  /** random, unique per process start */
  id: string;
  pid: number;
  hostname: string;
  /** base URL of the admin listener (`http://127.0.0.1:9464`), or null when there is none */
  adminUrl: string | null;
  startedAt: string;
  /**
   * The process's PID namespace (`pid:[4026531836]`, from /proc/self/ns/pid), or null where there
   * is none to read. A pid names the same process only within one namespace: a container with the
   * host's hostname (host networking) has pids of its own.
   */
  pidNamespace?: string | null;
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
 * A broadcast channel for reload requests with acknowledgements. Only fleets shared across hosts
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

/** The registry of running servers, and the reload broadcast when there is one. Methods reject with "store: ...". */
export interface Fleet {
  /** Registers or refreshes (heartbeat) a running server; the entry dies `ttlMs` after the last call. */
  registerServer(entry: ServerEntry, ttlMs: number): Promise<void>;
  unregisterServer(id: string): Promise<void>;
  /** Servers whose entry is alive (dead ones are dropped as a side effect). */
  listServers(): Promise<ServerEntry[]>;
  /**
   * Servers on this host whose entry expired while their process is still there: suspended
   * (SIGSTOP) or hung. They would answer from the old snapshot once they run again, so a reload
   * has not reached them (CONTRACT 10). Their entries are kept after expiry for this; an entry
   * whose process is gone is dropped as a side effect. (A server on another host whose entry
   * expired cannot be told from a crashed one: it is not listed.)
   */
  lapsedServers(): Promise<ServerEntry[]>;
  /** Reload broadcast, or null when the reload CLI must call each server's admin URL (embedded). */
  readonly signals: ReloadSignals | null;
}
