/**
 * The Redis client factory: one node or a Redis Cluster, from one REDIS_URL.
 *
 * - A comma-separated list of URLs is a list of cluster seed nodes.
 * - One URL is probed with `INFO cluster`: a node with `cluster_enabled:1` becomes the seed of an
 *   ioredis `Cluster`, so REDIS_URL may name any node of a cluster.
 *
 * Same safety on both (FIELD-NOTES, ioredis): the client fails commands at once while it is not
 * connected (no unbounded offline queue), every command has a timeout, reconnects keep going in
 * the background at most every 2 s. On a cluster, each node's own connection keeps its (bounded
 * by the timeout) queue, because ioredis opens node connections lazily on their first command;
 * a command to a master that died is retried while the cluster fails over
 * (`retryDelayOnFailover` × `maxRedirections`, about 4 s) and then fails with a clear error.
 */
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { within } from '../runtime/within.js';
import calculateSlot from 'cluster-key-slot';
import type { RespTarget } from './resp-hash-reader.js';

export type RedisClient = Redis | Cluster;

/**
 * The Redis Cluster hash slot of `key`, by the function ioredis itself routes cluster commands
 * with (its dependency cluster-key-slot), so a direct read goes to the node ioredis would ask.
 */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/** A direct read's target at host:port with the client's credentials and timeouts; null over TLS. */
function respTarget(host: string, port: number, o: RedisOptions, db: number | null | undefined): RespTarget | null {
  if (o.tls) return null;
  return {
    host,
    port,
    username: o.username,
    password: o.password,
    db,
    connectTimeoutMs: o.connectTimeout ?? 3_000,
    replyTimeoutMs: o.commandTimeout ?? 10_000,
  };
}

export interface ConnectionOptions {
  commandTimeoutMs: number;
  connectTimeoutMs: number;
  /**
   * The server's mode: when no node answers now, resolve anyway with a client that keeps
   * reconnecting (commands fail at once meanwhile). One URL then is taken for one node until it
   * answers, and becomes a cluster client then if it is a cluster node (Connected.clusterLater).
   */
  background?: boolean;
}

/**
 * Reconnection delays: soon after Redis answers again a server is back in the registry (and
 * reachable by `npm run reload`); at 2 s a reload right after an outage found servers still
 * serving that it could not see (black-box audit). A connection attempt every 0.5 s costs nothing.
 */
const retryStrategy = (times: number) => Math.min(times * 100, 500);

function nodeOptions(url: URL, o: ConnectionOptions): RedisOptions {
  return {
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:' ? {} : undefined,
    commandTimeout: o.commandTimeoutMs,
    connectTimeout: o.connectTimeoutMs,
    maxRetriesPerRequest: 1,
    retryStrategy,
  };
}

/** The seed URLs of REDIS_URL (one or several, comma-separated). */
export function seedUrls(redisUrl: string): string[] {
  return redisUrl
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function newCluster(seeds: URL[], o: ConnectionOptions, overrides: { enableOfflineQueue?: boolean } = {}): Cluster {
  const nodes: ClusterNode[] = seeds.map((u) => ({
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || 6379),
  }));
  return new Cluster(nodes, {
    lazyConnect: true,
    enableOfflineQueue: overrides.enableOfflineQueue ?? false,
    // Commands to keys of different slots, sent together, go out as one pipeline per node.
    enableAutoPipelining: true,
    redisOptions: nodeOptions(seeds[0], o),
    clusterRetryStrategy: retryStrategy,
    retryDelayOnFailover: 250,
    retryDelayOnClusterDown: 250,
    retryDelayOnTryAgain: 250,
    maxRedirections: 16,
    slotsRefreshTimeout: o.connectTimeoutMs,
    // A promoted replica is learnt from MOVED replies and connection errors too; this is the floor.
    slotsRefreshInterval: 5_000,
  });
}

/** The least time between two nodes a cluster's subscriber tries (throttleSubscriber). */
const SUBSCRIBER_RESELECT_MS = 500;

/**
 * ioredis's cluster subscriber picks another node the moment its connection ends, with no delay
 * (that connection has no retry strategy of its own): with every node of the cluster down, a
 * server opened ~2,400 connections a second, one core busy and its memory growing (3 GB in 18
 * minutes, seen on a test server whose Redis was stopped under it). Here it picks at most one
 * node every SUBSCRIBER_RESELECT_MS, as the clients' own reconnections go; a pick due sooner is
 * made then, unless the subscriber was stopped meanwhile (a disconnect).
 */
function throttleSubscriber(cluster: Cluster): Cluster {
  const subscriber = (cluster as unknown as { subscriber?: ClusterSubscriberInternals }).subscriber;
  if (subscriber === undefined || typeof subscriber.selectSubscriber !== 'function') return cluster;
  const select = subscriber.selectSubscriber.bind(subscriber);
  let last = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  subscriber.selectSubscriber = () => {
    const wait = last + SUBSCRIBER_RESELECT_MS - Date.now();
    if (wait <= 0) {
      last = Date.now();
      select();
      return;
    }
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      if (subscriber.isStarted?.() === false) return;
      last = Date.now();
      select();
    }, wait);
    timer.unref();
  };
  return cluster;
}

/** What throttleSubscriber reaches of ioredis's ClusterSubscriber (not part of its typings). */
interface ClusterSubscriberInternals {
  selectSubscriber?: () => void;
  isStarted?: () => boolean;
}

/**
 * A REDIS_URL that Redis refuses as it stands (its database): a setting to correct, not an outage
 * to wait out, so even a server's start stops on it rather than retrying.
 */
export class RedisSettingError extends Error {}

/** Whether `err` is Redis refusing the URL's database (`SELECT`): its index out of range, or any but 0 on a cluster node. */
function refusedDatabase(err: Error | null): err is Error {
  return err !== null && /DB index|SELECT/i.test(err.message);
}

/** Is the node at `url` part of a cluster? Resolves to the connected plain client when it is not. */
async function probe(url: string, o: ConnectionOptions): Promise<{ cluster: boolean; client: Redis }> {
  const client = new Redis(url, { ...nodeOptions(new URL(url), o), lazyConnect: true, enableOfflineQueue: false });
  // connect() rejects; the cause is often only in an 'error' event (kept here, and without a
  // listener ioredis would also print it).
  let lastError: Error | null = null;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  const t0 = Date.now();
  try {
    // The server (background) waits for these replies before it listens: a paused Redis held
    // both listeners closed for ~12 s (the ready check and the command timeout; README: it
    // listens anyway). It waits the connect timeout instead, then goes on as for a Redis that is down.
    const ask = async () => {
      await client.connect();
      return client.info('cluster');
    };
    const info = o.background
      ? await within(ask(), o.connectTimeoutMs, () => {
          throw new Error('Command timed out');
        })
      : await ask();
    // ioredis selects the URL's database as it connects and, refused (a database past the
    // server's `databases`, or any but 0 on a cluster node), only emits 'error' and stays on
    // database 0: an import published there (the operator audit). Its reply came before INFO's.
    // (set by the 'error' listener, which TypeScript does not follow: it sees only null here)
    const refused = lastError as Error | null;
    if (refusedDatabase(refused)) {
      const u = new URL(url);
      const db = u.pathname.slice(1) || u.searchParams.get('db');
      throw new RedisSettingError(
        `store: REDIS_URL ${redactUrl(url)} names database ${db}, which Redis refuses: ${refused.message}`,
      );
    }
    return { cluster: /^cluster_enabled:1\s*$/m.test(info), client };
  } catch (err) {
    client.disconnect();
    throw connectFailure(err as Error, lastError, Date.now() - t0);
  }
}

/**
 * Why a first connection failed, as a reader can act on it: ioredis rejects with "Connection is
 * closed." both for a refused connection and for a Redis that accepts but never replies (paused,
 * hung, not Redis), the cause being only in an 'error' event, or nowhere.
 */
function connectFailure(err: Error, lastError: Error | null, ms: number): Error {
  const noReply = (e: Error | null) => e === null || /Command timed out/i.test(e.message);
  if (!/Connection is closed|Command timed out/i.test(err.message)) return err;
  if (!noReply(lastError)) return new Error(lastError!.message);
  return new Error(
    `no reply within ${(ms / 1000).toFixed(1)} s (the connection opened, but Redis did not answer: paused, busy, or not Redis)`,
  );
}

/** A client for REDIS_URL and how to make another one alike (for pub/sub). */
export interface Connected {
  client: RedisClient;
  duplicate: () => RedisClient;
  /**
   * Set when the one node REDIS_URL names could not be asked at start whether it is part of a
   * cluster (a server's background start while it was down): asks it now, once it answers.
   * Resolves with a cluster client when it is a cluster node, null when it is not; rejects when
   * it could not be asked (ask again on its next connection).
   */
  clusterLater?: () => Promise<Connected | null>;
}

/** A connected client for REDIS_URL; rejects when no node answers. */
export async function connectRedis(redisUrl: string, o: ConnectionOptions): Promise<Connected> {
  const seeds = seedUrls(redisUrl).map((s) => new URL(s));
  if (seeds.length === 1) {
    let p: { cluster: boolean; client: Redis };
    try {
      p = await probe(seeds[0].toString(), o);
    } catch (err) {
      if (!o.background || err instanceof RedisSettingError) throw err;
      // ioredis goes on reconnecting with retryStrategy after a failed first connect.
      const client = new Redis(seeds[0].toString(), { ...nodeOptions(seeds[0], o), enableOfflineQueue: false });
      client.on('error', () => {});
      return {
        client,
        duplicate: () => client.duplicate({ enableOfflineQueue: true, lazyConnect: true }),
        // A cluster node kept on a plain client would answer MOVED for every key of the other
        // nodes' slots, for good: a server started while its one node was down stayed at 503
        // after the node came back (the fleet audit).
        clusterLater: async () => {
          const info = await client.info('cluster');
          if (!/^cluster_enabled:1\s*$/m.test(info)) return null;
          return clusterClient(seeds, o);
        },
      };
    }
    if (!p.cluster) {
      const client = p.client;
      return { client, duplicate: () => client.duplicate({ enableOfflineQueue: true, lazyConnect: true }) };
    }
    p.client.disconnect();
  }
  const c = clusterClient(seeds, o);
  const client = c.client as Cluster;
  // During a failover (cluster_state:fail) ioredis keeps retrying its ready check without ever
  // rejecting: bound the wait, so a command-line tool fails clearly instead of hanging.
  try {
    await within(connectClient(client), o.commandTimeoutMs, () => {
      throw new Error(
        `the cluster was not ready within ${o.commandTimeoutMs / 1000} s (a failover in progress, or no master for some slots)`,
      );
    });
  } catch (err) {
    // a cluster client keeps retrying with clusterRetryStrategy
    if (!o.background) {
      client.disconnect();
      throw err;
    }
  }
  return c;
}

/**
 * `client.connect()`, settled also by the client's 'ready'. A cluster whose first ready check
 * fails (CLUSTER INFO to a master that just died) reconnects on its own and becomes ready, but
 * the promise of that first connect() is never settled (ioredis 6: its close listener is gone by
 * then): an import started right after a master was killed waited out its 10 s and failed, with
 * the cluster ready since the failover ~3 s in (the fleet audit).
 */
export function connectClient(client: RedisClient): Promise<void> {
  let ready = () => {};
  return new Promise<void>((resolve, reject) => {
    ready = () => resolve();
    client.once('ready', ready);
    client.connect().then(
      () => resolve(),
      (err: Error) => reject(err),
    );
  }).finally(() => client.off('ready', ready));
}

/** A cluster client on `seeds`, not connected yet, and its duplicate for pub/sub. */
function clusterClient(seeds: URL[], o: ConnectionOptions): Connected {
  const client = newCluster(seeds, o);
  client.on('error', () => {}); // failures reach the caller as rejections (see probe)
  // A subscriber may queue while reconnecting: autoResubscribe restores the subscription.
  return { client, duplicate: () => throttleSubscriber(newCluster(seeds, o, { enableOfflineQueue: true })) };
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  if (url.includes(',')) return seedUrls(url).map(redactUrl).join(',');
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const name of [...u.searchParams.keys()]) if (name !== 'db') u.searchParams.set(name, '***');
    return u.toString();
  } catch {
    return '<unparsable REDIS_URL>';
  }
}

/** Options of RedisConnection.open (RedisStore.connect). */
export interface RedisConnectOptions {
  /** per-command timeout in ms (default 10000: a 4 MiB chunk on a slow link) */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * The server's mode: when the first connection fails, resolve anyway and keep reconnecting in
   * the background (every command fails with "store: redis unavailable" meanwhile), so the server
   * listens, answers 503 and becomes ready when Redis comes back. The CLIs keep the default: fail.
   */
  background?: boolean;
}

/**
 * One connection to Redis (a node or a cluster), shared by the snapshot store, the key store and
 * the fleet of one RedisStore. Turns every failure into a "store: ..." error: "store: redis
 * unavailable at <url>" when Redis cannot be reached, "store: redis <what>: <cause>" otherwise.
 */
export class RedisConnection {
  private current: Connected;
  /** the client: read it at each use (a plain one becomes a cluster client once, see adopt) */
  get client(): RedisClient {
    return this.current.client;
  }
  /** A new client alike (for pub/sub), not connected yet. */
  duplicate(): RedisClient {
    return this.current.duplicate();
  }
  /** the URL without its password, for messages */
  readonly url: string;
  /**
   * the URL as configured, password included, for this process's other connections (currentUrl):
   * the build worker given the masked one authenticated with "***" and every reload failed
   */
  private readonly configuredUrl: string;
  private lastError: Error | null = null;
  /**
   * Redis refusing the URL's database on a later connection: kept, as later errors ("Stream
   * isn't writeable") would hide the one cause an operator can act on
   */
  private refusedDb: Error | null = null;
  private readonly adoptListeners = new Set<() => void>();
  private adopted = 0;
  /** How many times the connection adopted another client (0 or 1). */
  get adoptions(): number {
    return this.adopted;
  }

  /** Calls `fn` when the connection goes on with a cluster client (adopt); returns how to stop. */
  onAdopt(fn: () => void): () => void {
    this.adoptListeners.add(fn);
    return () => this.adoptListeners.delete(fn);
  }

  /**
   * REDIS_URL for another connection now: for a cluster, the configured seeds followed by every
   * node this client knows (same scheme, user and password as the first seed), so that one seed
   * being down does not keep a new connection out; else the configured URL.
   */
  currentUrl(): string {
    if (!(this.client instanceof Cluster)) return this.configuredUrl;
    const seeds = seedUrls(this.configuredUrl);
    const first = new URL(seeds[0]);
    const all = new Set(seeds);
    for (const node of this.client.nodes('all')) {
      const { host, port } = node.options;
      if (host === undefined || port === undefined) continue;
      const u = new URL(first.toString());
      u.hostname = host.includes(':') ? `[${host}]` : host;
      u.port = String(port);
      all.add(u.toString());
    }
    return [...all].join(',');
  }

  private constructor(connected: Connected, url: string) {
    this.current = connected;
    this.url = redactUrl(url);
    this.configuredUrl = url;
    this.listen(connected.client);
    const later = connected.clusterLater;
    if (later !== undefined) {
      const client = connected.client;
      const ask = () => {
        later().then(
          (cluster) => {
            client.off('ready', ask);
            if (cluster !== null && this.current.client === client) this.adopt(cluster);
          },
          () => {
            /* asked again on its next connection */
          },
        );
      };
      client.on('ready', ask);
      if (client.status === 'ready') ask();
    }
  }

  private listen(client: RedisClient): void {
    client.on('error', (err: Error) => {
      this.noteError(err);
      // the URL's database refused on a later connection (a server that started while Redis was
      // down): ioredis would go on in database 0, so the client stops and calls fail, naming why
      if (refusedDatabase(err)) {
        this.refusedDb = err;
        client.disconnect();
      }
    });
  }

  /**
   * Goes on with `cluster` instead of the plain client (whose node turned out to be a cluster
   * node): later commands go to it, and subscribers made before are told (onAdopt) to replace
   * theirs, which would stay on that one node.
   */
  private adopt(cluster: Connected): void {
    const old = this.current.client;
    this.current = cluster;
    this.listen(cluster.client);
    // (a cluster client keeps retrying with clusterRetryStrategy when this first connect fails)
    cluster.client.connect().catch(() => {});
    old.disconnect();
    this.adopted++;
    for (const fn of this.adoptListeners) fn();
  }

  /** Connects; rejects with "store: redis unavailable at <url>: ..." when Redis cannot be reached. */
  static async open(url: string, options: RedisConnectOptions = {}): Promise<RedisConnection> {
    for (const seed of seedUrls(url)) {
      try {
        new URL(seed);
      } catch (err) {
        throw new Error(`store: bad REDIS_URL ${redactUrl(url)}: ${(err as Error).message}`);
      }
    }
    try {
      // Keeps reconnecting in the background (a server outlives a Redis restart), at most every 0.5 s.
      const c = await connectRedis(url, {
        commandTimeoutMs: options.commandTimeoutMs ?? 10_000,
        connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
        background: options.background === true,
      });
      return new RedisConnection(c, url);
    } catch (err) {
      if (err instanceof RedisSettingError) throw err;
      throw new Error(`store: redis unavailable at ${redactUrl(url)}: ${(err as Error).message}`);
    }
  }

  /**
   * Where readHashFields can read `key` from on a connection of its own: this client's node (or
   * the cluster node serving the key's slot), its user, password and database. Null when the
   * client is not ready, uses TLS or a Unix socket: the key is then read through the client.
   */
  directTarget(key: string): RespTarget | null {
    const c = this.client;
    if (c.status !== 'ready') return null;
    if (c instanceof Cluster) {
      const node = c.slots[keySlot(key)]?.[0];
      if (node === undefined) return null;
      const colon = node.lastIndexOf(':');
      const port = Number(node.slice(colon + 1));
      if (colon <= 0 || !Number.isInteger(port)) return null;
      // (a cluster has no database but 0)
      return respTarget(node.slice(0, colon), port, c.options.redisOptions ?? {}, null);
    }
    const o = c.options;
    if (o.path || o.host === undefined || o.port === undefined) return null;
    return respTarget(o.host, o.port, o, o.db);
  }

  /** Remembers the last connection error, named in "not connected" messages. */
  noteError(err: Error): void {
    this.lastError = err;
  }

  /** Whether the connection is up now. */
  get connected(): boolean {
    return this.client.status === 'ready';
  }

  /** `err` as a "store: ..." error: "redis unavailable" when the connection is down, else naming `what`. */
  // (plainCause, below, words ioredis's own messages for an operator)
  fail(what: string, err: unknown): Error {
    const msg = (err as Error)?.message ?? String(err);
    if (msg.startsWith('store:') || msg.startsWith('snapshot:')) return err as Error;
    if (
      this.client.status !== 'ready' ||
      /timed out|ECONNREFUSED|Connection is closed|isn't writeable|isn't ready|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Failed to refresh slots/i.test(
        msg,
      )
    ) {
      const status = this.client.status;
      const cause =
        status === 'ready'
          ? plainCause(msg)
          : `not connected (${status}${this.refusedDb ? `: the URL's database was refused: ${this.refusedDb.message}` : this.lastError ? `, last error: ${this.lastError.message}` : ''})`;
      return new Error(`store: redis unavailable at ${this.url}: ${cause}`);
    }
    return new Error(`store: redis ${what}: ${msg}`);
  }

  /** Runs `fn`, its failure turned into a "store: ..." error by `fail`. */
  async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.fail(what, err);
    }
  }

  /** Quits politely, or drops the connection when Redis does not answer. */
  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

/**
 * ioredis's words for a connection lost under a command, as an operator reads them: an import
 * whose Redis died said "Stream isn't writeable and enableOfflineQueue options is false".
 */
export function plainCause(msg: string): string {
  if (/isn't writeable|Connection is closed/i.test(msg)) return 'the connection was lost';
  if (/isn't ready/i.test(msg)) return 'the connection is not ready';
  return msg;
}
