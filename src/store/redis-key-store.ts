/**
 * API key records in Redis:
 *
 *   key:<prefix>              KeyRecord as JSON (without last_used_at);  keys: set of prefixes
 *   key-used                  hash prefix -> last_used_at
 *   keys:changes              incremented after every record written (create, revoke)
 */
import { type KeyRecord, unreadableKeyRecord } from '../auth/key-record.js';
import type { KeyStore, ReadOptions } from '../auth/key-store.js';
import type { RedisConnection } from './redis-connection.js';
import { FULL_LISTING_MS } from './stores.js';

/** Key records over one Redis connection. */
export class RedisKeyStore implements KeyStore {
  private readonly conn: RedisConnection;
  /** The last listing, the changes counter it was read at, and when (see listKeys). */
  private listed: { token: string; records: KeyRecord[]; at: number } | null = null;

  constructor(conn: RedisConnection) {
    this.conn = conn;
  }

  // last_used_at lives apart, in the hash key-used, so the server's frequent touches never
  // rewrite (and race with) a revocation made by the keys CLI. Three slots on a cluster: the
  // prefix is listed first, and a prefix listed without a record is skipped by listKeys. (With
  // the record first, a create that timed out while Redis was paused left, once Redis ran the
  // queued write, an active record that no listing showed and no revoke could be aimed from.)
  async putKey(record: KeyRecord): Promise<void> {
    await this.conn.run('writing key', async () => {
      const { last_used_at, ...rest } = record;
      await this.conn.client.sadd('keys', record.prefix);
      await Promise.all([
        this.conn.client.set(`key:${record.prefix}`, JSON.stringify(rest)),
        // (last uses are approximate: a key-used of another type must not stop a create)
        (last_used_at !== null
          ? this.conn.client.hset('key-used', record.prefix, last_used_at)
          : this.conn.client.hdel('key-used', record.prefix)
        ).catch(noLastUses(0)),
      ]);
      await this.conn.client.incr('keys:changes');
    });
  }

  /** The record stored as `json` for `prefix`, with its last use; a value not JSON is a stand-in the cache refuses. */
  private withUsed(prefix: string, json: string, used: string | null): KeyRecord {
    let record: unknown;
    try {
      record = JSON.parse(json);
    } catch (err) {
      return unreadableKeyRecord(prefix, `not JSON (${(err as Error).message})`);
    }
    if (!isObject(record)) return unreadableKeyRecord(prefix, 'not a JSON object');
    return { ...(record as unknown as KeyRecord), last_used_at: used };
  }

  async getKey(prefix: string, options: ReadOptions = {}): Promise<KeyRecord | null> {
    return this.conn.run('reading key', async () => {
      const [json, used] = await Promise.all([
        this.readRecord(prefix),
        options.lastUses === false ? null : this.conn.client.hget('key-used', prefix).catch(noLastUses(null)),
      ]);
      return json === null ? null : typeof json === 'string' ? this.withUsed(prefix, json, used) : json;
    });
  }

  /**
   * The stored value of key:<prefix>, or a stand-in when it is not a string: a hash there failed
   * every listing with WRONGTYPE, on every server, so no revocation took effect any more (a
   * regression audit).
   */
  private readRecord(prefix: string): Promise<string | null | KeyRecord> {
    return this.conn.client.get(`key:${prefix}`).catch((err: Error) => {
      if (!isWrongType(err)) throw err;
      return unreadableKeyRecord(prefix, 'not a string value in Redis (WRONGTYPE)');
    });
  }

  /**
   * Every record. A server lists every second: while keys:changes is the same (no key created or
   * revoked) and the last listing is under FULL_LISTING_MS old, that listing again (the same
   * array), its last_used_at as they were (a server does not read them). 50,000 keys were 50,000
   * GETs and a rebuilt key set a second, on every replica.
   */
  async listKeys(options: ReadOptions = {}): Promise<KeyRecord[]> {
    return this.conn.run('listing keys', async () => {
      const token = (await this.conn.client.get('keys:changes')) ?? 'none';
      const last = this.listed;
      if (last !== null && last.token === token && Date.now() - last.at < FULL_LISTING_MS) return last.records;
      const records = await this.readAll(options.lastUses !== false);
      this.listed = { token, records, at: Date.now() };
      return records;
    });
  }

  private async readAll(lastUses: boolean): Promise<KeyRecord[]> {
    const prefixes = await this.prefixes();
    if (prefixes.length === 0) return [];
    const [values, used] = await Promise.all([
      Promise.all(prefixes.map((p) => this.readRecord(p))),
      lastUses
        ? this.conn.client.hgetall('key-used').catch(noLastUses<Record<string, string>>({}))
        : ({} as Record<string, string>),
    ]);
    const out: KeyRecord[] = [];
    values.forEach((v, i) => {
      if (v === null) return;
      out.push(typeof v === 'string' ? this.withUsed(prefixes[i], v, used[prefixes[i]] ?? null) : v);
    });
    return out;
  }

  /**
   * The listed prefixes. The `keys` set of another type failed every listing with a bare WRONGTYPE,
   * and a revoke said it worked while no server could list it (a regression audit): named here.
   */
  private prefixes(): Promise<string[]> {
    return this.conn.client.smembers('keys').catch((err: Error) => {
      if (!isWrongType(err)) throw err;
      throw new Error('store: redis key "keys" is not a set (WRONGTYPE): no key can be listed; fix or delete it');
    });
  }

  async revokeKey(prefix: string, at: string): Promise<boolean> {
    return this.conn.run('revoking key', async () => {
      // a revocation no server can list would not take effect: refused, named (prefixes)
      await this.prefixes();
      const json = await this.conn.client.get(`key:${prefix}`);
      if (json === null) return false;
      let rec: KeyRecord;
      try {
        rec = JSON.parse(json) as KeyRecord;
        if (!isObject(rec)) throw new Error('not an object');
      } catch (err) {
        throw new Error(
          `store: redis key record key:${prefix} is not a JSON object (${(err as Error).message}); fix or delete it`,
        );
      }
      rec.revoked_at ??= at;
      await this.conn.client.set(`key:${prefix}`, JSON.stringify(rec));
      await this.conn.client.incr('keys:changes');
      return true;
    });
  }

  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    const args: string[] = [];
    for (const [prefix, at] of lastUsed) args.push(prefix, at);
    await this.conn.run('touching keys', async () => {
      await this.conn.client.eval(TOUCH_SCRIPT, 1, 'key-used', ...args);
    });
  }
}

/**
 * last_used_at only moves forward: each server (and serving thread) flushes what it last saw, and
 * an unconditional HSET let a server's older use overwrite a newer one another server had written
 * (a review: 10:17:43.986 went back to 10:17:43.460). ARGV: prefix, instant pairs; the instants
 * are toISOString()s, whose text order is their time order.
 */
const TOUCH_SCRIPT = `
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if not cur or cur < ARGV[i + 1] then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 0
`;

/**
 * The last uses when `key-used` is not a hash (WRONGTYPE): none, rather than a failed listing (a
 * server reads none; the keys CLI shows the records without them).
 */
function noLastUses<T>(none: T): (err: Error) => T {
  return (err) => {
    if (!isWrongType(err)) throw err;
    return none;
  };
}

/** Redis refusing a command on a key of another type (a hand-edited store). */
function isWrongType(err: Error): boolean {
  return /WRONGTYPE/.test(err.message);
}

/** A plain JSON object (not null, an array or a scalar): what a key record must be. */
function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
