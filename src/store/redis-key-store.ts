/**
 * API key records in Redis:
 *
 *   key:<prefix>              KeyRecord as JSON (without last_used_at);  keys: set of prefixes
 *   key-used                  hash prefix -> last_used_at
 */
import type { KeyRecord } from '../auth/key-record.js';
import type { KeyStore } from '../auth/key-store.js';
import type { RedisConnection } from './redis-connection.js';

/** Key records over one Redis connection. */
export class RedisKeyStore implements KeyStore {
  private readonly conn: RedisConnection;

  constructor(conn: RedisConnection) {
    this.conn = conn;
  }

  // last_used_at lives apart, in the hash key-used, so the server's frequent touches never
  // rewrite (and race with) a revocation made by the keys CLI. Three slots on a cluster: the
  // record goes first, and a prefix listed without a record is skipped by listKeys.
  async putKey(record: KeyRecord): Promise<void> {
    await this.conn.run('writing key', async () => {
      const { last_used_at, ...rest } = record;
      await this.conn.client.set(`key:${record.prefix}`, JSON.stringify(rest));
      await Promise.all([
        this.conn.client.sadd('keys', record.prefix),
        last_used_at !== null
          ? this.conn.client.hset('key-used', record.prefix, last_used_at)
          : this.conn.client.hdel('key-used', record.prefix),
      ]);
    });
  }

  private withUsed(json: string, used: string | null): KeyRecord {
    return { ...(JSON.parse(json) as KeyRecord), last_used_at: used };
  }

  async getKey(prefix: string): Promise<KeyRecord | null> {
    return this.conn.run('reading key', async () => {
      const [json, used] = await Promise.all([
        this.conn.client.get(`key:${prefix}`),
        this.conn.client.hget('key-used', prefix),
      ]);
      return json === null ? null : this.withUsed(json, used);
    });
  }

  async listKeys(): Promise<KeyRecord[]> {
    return this.conn.run('listing keys', async () => {
      const prefixes = await this.conn.client.smembers('keys');
      if (prefixes.length === 0) return [];
      const [values, used] = await Promise.all([
        Promise.all(prefixes.map((p) => this.conn.client.get(`key:${p}`))),
        this.conn.client.hgetall('key-used'),
      ]);
      const out: KeyRecord[] = [];
      values.forEach((v, i) => {
        if (v !== null) out.push(this.withUsed(v, used[prefixes[i]] ?? null));
      });
      return out;
    });
  }

  async revokeKey(prefix: string, at: string): Promise<boolean> {
    return this.conn.run('revoking key', async () => {
      const json = await this.conn.client.get(`key:${prefix}`);
      if (json === null) return false;
      const rec = JSON.parse(json) as KeyRecord;
      rec.revoked_at ??= at;
      await this.conn.client.set(`key:${prefix}`, JSON.stringify(rec));
      return true;
    });
  }

  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    await this.conn.run('touching keys', async () => {
      await this.conn.client.hset('key-used', Object.fromEntries(lastUsed));
    });
  }
}
