/**
 * The registry of running servers and the reload broadcast, in Redis:
 *
 *   server:<id>               ServerEntry as JSON, with a TTL;  servers: set of ids
 *   servers:seen              hash id -> ServerEntry JSON, without a TTL: what an expired entry
 *                             was (Fleet.lapsedServers); dropped when its process is gone from
 *                             its host, or a day after its last heartbeat
 *   reload (channel)          ReloadRequest as JSON
 *   reload-request:<id>       the request as JSON, written before it is published (a Redis that
 *                             refuses writes fails the command at once), expires after 5 minutes
 *   reload-ack:<request id>   hash server id -> ReloadAck JSON, expires after 5 minutes
 */
import type { Fleet, ReloadAck, ReloadRequest, ReloadSignals, ServerEntry } from './fleet.js';
import { connectClient, type RedisClient, type RedisConnection } from './redis-connection.js';

import { lapsedButAlive, onThisHost } from './file-utils.js';

const RELOAD_CHANNEL = 'reload';
const SEEN = 'servers:seen';
/** How long an expired entry of another host is remembered (nothing tells a crash from a hang there). */
const SEEN_RETENTION_MS = 86_400_000;
const ACK_TTL_S = 300;
/** How often a subscriber that must be replaced (RedisConnection.onAdopt) is tried again. */
const RESUBSCRIBE_MS = 1_000;

/** Server entries and reload signals over one Redis connection. */
export class RedisFleet implements Fleet {
  readonly signals: ReloadSignals;
  private readonly conn: RedisConnection;

  constructor(conn: RedisConnection) {
    this.conn = conn;
    this.signals = this.makeSignals();
  }

  async registerServer(entry: ServerEntry, ttlMs: number): Promise<void> {
    await this.conn.run('registering server', async () => {
      await Promise.all([
        this.conn.client.set(`server:${entry.id}`, JSON.stringify(entry), 'PX', ttlMs),
        this.conn.client.sadd('servers', entry.id),
        this.conn.client.hset(SEEN, entry.id, JSON.stringify(entry)),
      ]);
    });
  }

  async unregisterServer(id: string): Promise<void> {
    await this.conn.run('unregistering server', async () => {
      await Promise.all([
        this.conn.client.del(`server:${id}`),
        this.conn.client.srem('servers', id),
        this.conn.client.hdel(SEEN, id),
      ]);
    });
  }

  async listServers(): Promise<ServerEntry[]> {
    return this.conn.run('listing servers', async () => {
      const ids = await this.conn.client.smembers('servers');
      if (ids.length === 0) return [];
      const values = await Promise.all(ids.map((id) => this.conn.client.get(`server:${id}`)));
      const out: ServerEntry[] = [];
      const dead: string[] = [];
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (v === null) dead.push(ids[i]);
        else out.push(JSON.parse(v) as ServerEntry);
      }
      if (dead.length > 0) await this.conn.client.srem('servers', ...dead);
      return out;
    });
  }

  async lapsedServers(): Promise<ServerEntry[]> {
    return this.conn.run('listing servers', async () => {
      const seen = await this.conn.client.hgetall(SEEN);
      const ids = Object.keys(seen);
      if (ids.length === 0) return [];
      const live = await Promise.all(ids.map((id) => this.conn.client.exists(`server:${id}`)));
      const out: ServerEntry[] = [];
      const drop: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        if (live[i] === 1) continue;
        let e: ServerEntry;
        try {
          e = JSON.parse(seen[ids[i]]) as ServerEntry;
        } catch {
          drop.push(ids[i]);
          continue;
        }
        if (lapsedButAlive(e)) out.push(e);
        // of this host, its process gone; of another host, remembered a day
        else if (onThisHost(e) || Date.now() - e.heartbeatAt > SEEN_RETENTION_MS) drop.push(ids[i]);
      }
      if (drop.length > 0) await this.conn.client.hdel(SEEN, ...drop);
      return out;
    });
  }

  private makeSignals(): ReloadSignals {
    return {
      subscribe: async (onRequest, onReady) => {
        const open = async (): Promise<RedisClient> => {
          // A subscribed connection can only (un)subscribe: a second one, which may queue while
          // reconnecting (autoResubscribe restores the subscription).
          const sub = this.conn.duplicate();
          sub.on('error', (err: Error) => {
            this.conn.noteError(err);
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
            await connectClient(sub);
            await sub.subscribe(RELOAD_CHANNEL);
          } catch (err) {
            sub.disconnect();
            throw this.conn.fail('subscribing', err);
          }
          // Registered after the first subscription: every later 'ready' is a reconnection.
          sub.on('ready', onReady);
          return sub;
        };
        const adoptions = this.conn.adoptions;
        let sub = await open();
        let closed = false;
        // The connection turned into a cluster client (its one node was down at the start, and is
        // a cluster node): a subscriber made before stays on that node, and reload requests
        // stopped reaching this server whenever the node went down (a regression audit). A
        // cluster subscriber replaces it, tried again every second until it is subscribed.
        const replace = () => {
          if (closed) return;
          open().then(
            (next) => {
              if (closed) {
                next.disconnect();
                return;
              }
              sub.disconnect();
              sub = next;
              onReady();
            },
            () => setTimeout(replace, RESUBSCRIBE_MS).unref(),
          );
        };
        const off = this.conn.onAdopt(replace);
        // (adopted while the first one was being made: from the client of before, perhaps)
        if (this.conn.adoptions !== adoptions) replace();
        return async () => {
          closed = true;
          off();
          sub.disconnect();
        };
      },
      publish: (req) =>
        this.conn.run('publishing reload request', async () => {
          // Written first, though no server reads it: servers answer by writing to Redis, and a
          // Redis that refuses writes (out of memory) would leave the command waiting for acks
          // that cannot come, then blaming the servers (an operator audit). Refused here, the
          // command fails at once with Redis's own words.
          await this.conn.client.set(`reload-request:${req.requestId}`, JSON.stringify(req), 'EX', ACK_TTL_S);
          await this.conn.client.publish(RELOAD_CHANNEL, JSON.stringify(req));
        }),
      putAck: (requestId, serverId, ack) =>
        this.conn.run('writing reload ack', async () => {
          await this.conn.client
            .multi()
            .hset(`reload-ack:${requestId}`, serverId, JSON.stringify(ack))
            .expire(`reload-ack:${requestId}`, ACK_TTL_S)
            .exec();
        }),
      acks: (requestId) =>
        this.conn.run('reading reload acks', async () => {
          const all = await this.conn.client.hgetall(`reload-ack:${requestId}`);
          return new Map(Object.entries(all).map(([id, json]) => [id, JSON.parse(json) as ReloadAck]));
        }),
    };
  }
}
