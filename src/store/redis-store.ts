/**
 * The Redis store (ioredis). Key layout; one organization's keys share the hash tag `{<org>}` so
 * its multi-key operations stay legal on Redis Cluster:
 *
 *   snap:{<org>}:ptr          hash {version, previous}: the pointer readers follow
 *   snap:{<org>}:seq          INCR counter allocating versions
 *   snap:{<org>}:versions     sorted set of versions written (complete or not), for clean-up
 *   snap:{<org>}:v:<n>        hash {manifest, 0, 1, ...}: one version's manifest and chunks
 *   snap:orgs                 set of organization ids that ever published
 *   key:<prefix>              KeyRecord as JSON (without last_used_at);  keys: set of prefixes
 *   key-used                  hash prefix -> last_used_at
 *   server:<id>               ServerEntry as JSON, with a TTL;  servers: set of ids
 *   reload (channel)          ReloadRequest as JSON
 *   reload-ack:<request id>   hash server id -> ReloadAck JSON, expires after 5 minutes
 *
 * Publish: chunks and manifest under a fresh version, then the pointer moves forward in one
 * script call, so a reader never sees half a snapshot; versions older than the previous one are
 * unlinked afterwards. Commands never queue while disconnected and time out: a dead Redis gives
 * a clear "store: redis unavailable at <url>" error at once instead of a hang.
 *
 * Redis Cluster (redis-connection.ts): keys of different slots are never used in one command,
 * MULTI or pipeline (CROSSSLOT); they go out as separate commands, which the cluster client
 * batches per node.
 */
import { connectRedis, seedUrls, type RedisClient } from './redis-connection.js';
import type { OrgData } from '../model/records.js';
import type { FlatIndex } from './flat-index.js';
import { encodeSnapshot, parseManifest, prepareSnapshot, SnapshotDecoder } from './snapshot-format.js';
import type {
  KeyRecord,
  LatestListing,
  LoadFlatOptions,
  PublishOptions,
  ReloadAck,
  ReloadRequest,
  ReloadSignals,
  ServerEntry,
  SnapshotRef,
  Store,
} from './store.js';
import { isCanonicalOrganizationId } from '../model/organization-id.js';

const RELOAD_CHANNEL = 'reload';
const ACK_TTL_S = 300;
// Chunks in flight at once on read and write: enough to hide latency, bounded memory.
const WINDOW = 8;

// Moves the pointer forward only: returns the old version, or -current when it is not older.
const SWITCH_SCRIPT = `
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local v = tonumber(ARGV[1])
if cur >= v then return -cur end
redis.call('HSET', KEYS[1], 'version', v, 'previous', cur)
return cur`;

// Allocates a version. A fresh counter (new organization, or a Redis that lost its data) starts
// at the current time in ms, so versions never repeat after a data loss: a server still holding
// an old version 1 must not mistake a new version 1 for it.
const NEXT_VERSION_SCRIPT = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then v = tonumber(ARGV[1]); redis.call('SET', KEYS[1], v) end
return v`;

const snapKey = (org: string, rest: string): string => `snap:{${org}}:${rest}`;
const versionKey = (ref: SnapshotRef): string => snapKey(ref.organizationId, `v:${ref.version}`);

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  if (url.includes(',')) return seedUrls(url).map(redactUrl).join(',');
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable REDIS_URL>';
  }
}

export interface RedisStoreOptions {
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

/** Store over one Redis server. Create with `RedisStore.connect`. */
export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  readonly signals: ReloadSignals;
  private readonly redis: RedisClient;
  private readonly duplicate: () => RedisClient;
  private readonly url: string;
  private readonly rawUrl: string;
  private lastError: Error | null = null;

  private constructor(redis: RedisClient, duplicate: () => RedisClient, url: string) {
    this.redis = redis;
    this.duplicate = duplicate;
    this.url = redactUrl(url);
    this.rawUrl = url;
    redis.on('error', (err: Error) => {
      this.lastError = err;
    });
    this.signals = this.makeSignals();
  }

  /** Connects; rejects with "store: redis unavailable at <url>: ..." when Redis cannot be reached. */
  static async connect(url: string, options: RedisStoreOptions = {}): Promise<RedisStore> {
    for (const seed of seedUrls(url)) {
      try {
        new URL(seed);
      } catch (err) {
        throw new Error(`store: bad REDIS_URL ${redactUrl(url)}: ${(err as Error).message}`);
      }
    }
    try {
      // Keeps reconnecting in the background (a server outlives a Redis restart), at most every 2 s.
      const c = await connectRedis(url, {
        commandTimeoutMs: options.commandTimeoutMs ?? 10_000,
        connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
        background: options.background === true,
      });
      return new RedisStore(c.client, c.duplicate, url);
    } catch (err) {
      throw new Error(`store: redis unavailable at ${redactUrl(url)}: ${(err as Error).message}`);
    }
  }

  private fail(what: string, err: unknown): Error {
    const msg = (err as Error)?.message ?? String(err);
    if (msg.startsWith('store:') || msg.startsWith('snapshot:')) return err as Error;
    if (
      this.redis.status !== 'ready' ||
      /timed out|ECONNREFUSED|Connection is closed|isn't writeable|isn't ready|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Failed to refresh slots/i.test(
        msg,
      )
    ) {
      const status = this.redis.status;
      const cause =
        status === 'ready'
          ? msg
          : `not connected (${status}${this.lastError ? `, last error: ${this.lastError.message}` : ''})`;
      return new Error(`store: redis unavailable at ${this.url}: ${cause}`);
    }
    return new Error(`store: redis ${what}: ${msg}`);
  }

  private async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.fail(what, err);
    }
  }

  // ---- snapshots

  async publishSnapshot(data: OrgData, options: PublishOptions = {}): Promise<SnapshotRef> {
    const org = data.organizationId;
    if (!isCanonicalOrganizationId(org))
      throw new Error(`store: organization id must be a lower-case UUID, got ${JSON.stringify(org)}`);
    // Built before any key is written: a build failure leaves Redis untouched.
    const prepared = prepareSnapshot(data, options.format);
    return this.run(`publishing organization ${org}`, async () => {
      const r = this.redis;
      await r.sadd('snap:orgs', org);
      const version = Number(await r.eval(NEXT_VERSION_SCRIPT, 1, snapKey(org, 'seq'), String(Date.now())));
      const ref = { organizationId: org, version };
      const key = versionKey(ref);
      // Recorded first, so a publisher killed midway leaves something the next clean-up finds.
      await r.zadd(snapKey(org, 'versions'), version, String(version));
      const enc = encodeSnapshot(prepared, version);
      let i = 0,
        inFlight: Promise<unknown>[] = [];
      for (const chunk of enc.chunks) {
        inFlight.push(r.hset(key, String(i++), Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
        if (inFlight.length >= WINDOW) {
          await Promise.all(inFlight);
          inFlight = [];
        }
      }
      await Promise.all(inFlight);
      await r.hset(key, 'manifest', Buffer.from(enc.manifest()));
      const old = Number(await r.eval(SWITCH_SCRIPT, 1, snapKey(org, 'ptr'), String(version)));
      if (old < 0) {
        await r.unlink(key);
        throw new Error(`store: a newer snapshot (version ${-old}) of organization ${org} was published concurrently`);
      }
      await this.removeOldVersions(org, version, old);
      return ref;
    });
  }

  // Keeps the current and previous versions, and newer ones (a concurrent publisher's, not switched yet).
  private async removeOldVersions(org: string, current: number, previous: number): Promise<void> {
    const versions = (await this.redis.zrangebyscore(snapKey(org, 'versions'), '-inf', `(${current}`)).map(Number);
    for (const v of versions) {
      if (v === previous) continue;
      await this.redis.unlink(versionKey({ organizationId: org, version: v }));
      await this.redis.zrem(snapKey(org, 'versions'), String(v));
    }
  }

  async latest(): Promise<SnapshotRef[]> {
    const { refs, unreadable } = await this.listLatest();
    if (unreadable.length > 0) throw new Error(unreadable[0].error);
    return refs;
  }

  async listLatest(): Promise<LatestListing> {
    return this.run('listing snapshots', async () => {
      const orgs = await this.redis.smembers('snap:orgs');
      const out: LatestListing = { refs: [], unreadable: [] };
      if (orgs.length === 0) return out;
      // One command a pointer (each organization is its own slot on a cluster), sent together;
      // a failed one is kept apart so one organization's bad pointer does not fail the listing.
      const res = await Promise.all(
        orgs.map((org) =>
          this.redis.hget(snapKey(org, 'ptr'), 'version').then(
            (v) => [null, v] as const,
            (e: Error) => [e, null] as const,
          ),
        ),
      );
      orgs.forEach((org, i) => {
        const [err, v] = res[i];
        // One organization's bad pointer (wrong type, not a version) is reported apart (issue 13);
        // a connection error is every organization's and fails the listing.
        if (err && (this.redis.status !== 'ready' || !/WRONGTYPE/.test(err.message))) throw err;
        const version = err ? NaN : v === null || v === undefined ? null : Number(v);
        if (version === null) return;
        if (!isCanonicalOrganizationId(org)) return; // not ours, as the embedded store skips foreign folders
        if (!Number.isSafeInteger(version) || version < 1) {
          const cause = err ? err.message : `bad version ${JSON.stringify(v)}`;
          out.unreadable.push({
            organizationId: org,
            error: `store: unreadable pointer of organization ${org}: ${cause}`,
          });
          return;
        }
        out.refs.push({ organizationId: org, version });
      });
      return out;
    });
  }

  async loadSnapshot(ref: SnapshotRef): Promise<OrgData> {
    return this.run(`loading organization ${ref.organizationId} version ${ref.version}`, async () =>
      (await this.readSnapshot(ref)).finishData(),
    );
  }

  async loadFlatIndex(ref: SnapshotRef, options: LoadFlatOptions = {}): Promise<FlatIndex> {
    return this.run(`loading organization ${ref.organizationId} version ${ref.version}`, async () =>
      (await this.readSnapshot(ref, options)).finishFlat(),
    );
  }

  private async readSnapshot(ref: SnapshotRef, options: LoadFlatOptions = {}): Promise<SnapshotDecoder> {
    {
      const key = versionKey(ref);
      const mbytes = await this.redis.hgetBuffer(key, 'manifest');
      if (mbytes === null)
        throw new Error(`store: no snapshot version ${ref.version} of organization ${ref.organizationId}`);
      const manifest = parseManifest(mbytes, ref);
      const decoder = new SnapshotDecoder(manifest, options);
      for (let start = 0; start < manifest.chunks.length; start += WINDOW) {
        const end = Math.min(start + WINDOW, manifest.chunks.length);
        const batch = [];
        for (let i = start; i < end; i++) batch.push(this.redis.hgetBuffer(key, String(i)));
        const chunks = await Promise.all(batch);
        chunks.forEach((c, j) => {
          if (c === null)
            throw new Error(
              `snapshot: chunk ${start + j} missing for organization ${ref.organizationId} version ${ref.version}`,
            );
          decoder.add(start + j, c);
        });
      }
      return decoder;
    }
  }

  /** Raw access for tests that tamper with a stored snapshot: the hash key of one version. */
  versionKeyOf(ref: SnapshotRef): string {
    return versionKey(ref);
  }

  /** Whether the connection is up now. */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  /** The underlying connection, for tests. */
  get client(): RedisClient {
    return this.redis;
  }

  // ---- keys

  // last_used_at lives apart, in the hash key-used, so the server's frequent touches never
  // rewrite (and race with) a revocation made by the keys CLI. Three slots on a cluster: the
  // record goes first, and a prefix listed without a record is skipped by listKeys.
  async putKey(record: KeyRecord): Promise<void> {
    await this.run('writing key', async () => {
      const { last_used_at, ...rest } = record;
      await this.redis.set(`key:${record.prefix}`, JSON.stringify(rest));
      await Promise.all([
        this.redis.sadd('keys', record.prefix),
        last_used_at !== null
          ? this.redis.hset('key-used', record.prefix, last_used_at)
          : this.redis.hdel('key-used', record.prefix),
      ]);
    });
  }

  private withUsed(json: string, used: string | null): KeyRecord {
    return { ...(JSON.parse(json) as KeyRecord), last_used_at: used };
  }

  async getKey(prefix: string): Promise<KeyRecord | null> {
    return this.run('reading key', async () => {
      const [json, used] = await Promise.all([this.redis.get(`key:${prefix}`), this.redis.hget('key-used', prefix)]);
      return json === null ? null : this.withUsed(json, used);
    });
  }

  async listKeys(): Promise<KeyRecord[]> {
    return this.run('listing keys', async () => {
      const prefixes = await this.redis.smembers('keys');
      if (prefixes.length === 0) return [];
      const [values, used] = await Promise.all([
        Promise.all(prefixes.map((p) => this.redis.get(`key:${p}`))),
        this.redis.hgetall('key-used'),
      ]);
      const out: KeyRecord[] = [];
      values.forEach((v, i) => {
        if (v !== null) out.push(this.withUsed(v, used[prefixes[i]] ?? null));
      });
      return out;
    });
  }

  async revokeKey(prefix: string, at: string): Promise<boolean> {
    return this.run('revoking key', async () => {
      const json = await this.redis.get(`key:${prefix}`);
      if (json === null) return false;
      const rec = JSON.parse(json) as KeyRecord;
      rec.revoked_at ??= at;
      await this.redis.set(`key:${prefix}`, JSON.stringify(rec));
      return true;
    });
  }

  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    await this.run('touching keys', async () => {
      await this.redis.hset('key-used', Object.fromEntries(lastUsed));
    });
  }

  // ---- servers and reload signals

  async registerServer(entry: ServerEntry, ttlMs: number): Promise<void> {
    await this.run('registering server', async () => {
      await Promise.all([
        this.redis.set(`server:${entry.id}`, JSON.stringify(entry), 'PX', ttlMs),
        this.redis.sadd('servers', entry.id),
      ]);
    });
  }

  async unregisterServer(id: string): Promise<void> {
    await this.run('unregistering server', async () => {
      await Promise.all([this.redis.del(`server:${id}`), this.redis.srem('servers', id)]);
    });
  }

  async listServers(): Promise<ServerEntry[]> {
    return this.run('listing servers', async () => {
      const ids = await this.redis.smembers('servers');
      if (ids.length === 0) return [];
      const values = await Promise.all(ids.map((id) => this.redis.get(`server:${id}`)));
      const out: ServerEntry[] = [];
      const dead: string[] = [];
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (v === null) dead.push(ids[i]);
        else out.push(JSON.parse(v) as ServerEntry);
      }
      if (dead.length > 0) await this.redis.srem('servers', ...dead);
      return out;
    });
  }

  private makeSignals(): ReloadSignals {
    return {
      subscribe: async (onRequest, onReady) => {
        // A subscribed connection can only (un)subscribe: a second one, which may queue while
        // reconnecting (autoResubscribe restores the subscription).
        const sub = this.duplicate();
        sub.on('error', (err: Error) => {
          this.lastError = err;
        });
        sub.on('message', (_channel: string, message: string) => {
          try {
            const req = JSON.parse(message) as ReloadRequest;
            if (typeof req.requestId === 'string') onRequest(req);
          } catch {
            /* not ours */
          }
        });
        try {
          await sub.connect();
          await sub.subscribe(RELOAD_CHANNEL);
        } catch (err) {
          sub.disconnect();
          throw this.fail('subscribing', err);
        }
        // Registered after the first subscription: every later 'ready' is a reconnection.
        sub.on('ready', onReady);
        return async () => {
          sub.disconnect();
        };
      },
      publish: (req) =>
        this.run('publishing reload request', async () => {
          await this.redis.publish(RELOAD_CHANNEL, JSON.stringify(req));
        }),
      putAck: (requestId, serverId, ack) =>
        this.run('writing reload ack', async () => {
          await this.redis
            .multi()
            .hset(`reload-ack:${requestId}`, serverId, JSON.stringify(ack))
            .expire(`reload-ack:${requestId}`, ACK_TTL_S)
            .exec();
        }),
      acks: (requestId) =>
        this.run('reading reload acks', async () => {
          const all = await this.redis.hgetall(`reload-ack:${requestId}`);
          return new Map(Object.entries(all).map(([id, json]) => [id, JSON.parse(json) as ReloadAck]));
        }),
    };
  }

  reopenEnv(): NodeJS.ProcessEnv {
    return { REDIS_URL: this.rawUrl };
  }

  async close(): Promise<void> {
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }
}
