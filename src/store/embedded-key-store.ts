/**
 * API key records in one file under DATA_DIR, shared safely by several processes:
 *
 *   keys.json (+ .keys.lock)           {"<prefix>": KeyRecord, ...}
 *   key-used.json (+ .key-used.lock)   {"<prefix>": last_used_at, ...}
 *
 * last_used_at lives apart, as in Redis (key-used), so a server's flushes never take the lock the
 * keys CLI writes under: a server with one thread under heavy load held `.keys.lock` ~10 s a
 * flush (each file call of the write waited for a turn of its busy loop), and a `keys revoke`
 * waited that long or failed (a review). A value in keys.json (written before) still counts.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { type KeyRecord, unreadableKeyRecord } from '../auth/key-record.js';
import { fileStamp, isDir, storeError as wrap, withLock, writeFileAtomic } from './file-utils.js';
import type { KeyStore } from '../auth/key-store.js';

/** Key records in `dataDir`/keys.json. */
export class EmbeddedKeyStore implements KeyStore {
  private readonly dataDir: string;
  private readonly keysFile: string;
  private readonly usedFile: string;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.keysFile = path.join(this.dataDir, 'keys.json');
    this.usedFile = path.join(this.dataDir, 'key-used.json');
  }

  /** prefix -> last_used_at; {} without the file. An unreadable one is {} too: last uses are approximate, keys are not. */
  private async readUsed(): Promise<Record<string, string>> {
    try {
      const used = JSON.parse(await fs.readFile(this.usedFile, 'utf8')) as unknown;
      return typeof used === 'object' && used !== null && !Array.isArray(used) ? (used as Record<string, string>) : {};
    } catch {
      return {};
    }
  }

  /**
   * The record stored for `prefix`, with its last use in `used` when that is later than the one it
   * carries; a value that is not an object is a stand-in the key cache refuses, named by its prefix.
   */
  private withUsed(prefix: string, record: KeyRecord, used: Record<string, string>): KeyRecord {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      return unreadableKeyRecord(prefix, 'not a JSON object');
    const at = Object.hasOwn(used, record.prefix) ? used[record.prefix] : undefined;
    if (typeof at !== 'string' || (record.last_used_at != null && record.last_used_at >= at)) return record;
    return { ...record, last_used_at: at };
  }

  private async readKeys(): Promise<Record<string, KeyRecord>> {
    try {
      return JSON.parse(await fs.readFile(this.keysFile, 'utf8')) as Record<string, KeyRecord>;
    } catch (err) {
      // no keys file yet: no keys, but only in a folder that is there (a DATA_DIR not reachable yet,
      // a symlink to a volume not mounted, is the store down: a key cannot be checked, 503, not 401)
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (await isDir(this.dataDir))) return {};
      throw wrap(`reading ${this.keysFile}`, err);
    }
  }

  // Read-modify-write under a lock: the server (touchKeys) and the keys CLI write concurrently.
  private async updateKeys<T>(fn: (keys: Record<string, KeyRecord>) => T): Promise<T> {
    try {
      return await withLock(
        path.join(this.dataDir, '.keys.lock'),
        async () => {
          const keys = await this.readKeys();
          const result = fn(keys);
          await writeFileAtomic(this.keysFile, JSON.stringify(keys, null, 1) + '\n');
          return result;
        },
        this.dataDir,
      );
    } catch (err) {
      throw wrap('writing keys', err);
    }
  }

  async putKey(record: KeyRecord): Promise<void> {
    await this.updateKeys((keys) => {
      keys[record.prefix] = record;
    });
  }

  async getKey(prefix: string): Promise<KeyRecord | null> {
    const [keys, used] = await Promise.all([this.readKeys(), this.readUsed()]);
    return Object.hasOwn(keys, prefix) ? this.withUsed(prefix, keys[prefix], used) : null;
  }

  /**
   * Every record; the same array as the last call while keys.json is the same file (it is only
   * ever replaced by a rename: a new inode). A server lists the keys every second: re-reading and
   * parsing 50,000 records (24 MB) each time took most of a core. Its last_used_at are those of
   * when it was read (a server does not read them; `keys list` is a process of its own).
   */
  async listKeys(): Promise<KeyRecord[]> {
    const stamp = await fileStamp(this.keysFile).catch(() => null);
    if (stamp !== null && this.listed !== null && this.listed.stamp === stamp) return this.listed.records;
    const [keys, used] = await Promise.all([this.readKeys(), this.readUsed()]);
    const records = Object.entries(keys).map(([prefix, r]) => this.withUsed(prefix, r, used));
    this.listed = stamp === null ? null : { stamp, records };
    return records;
  }

  /** The last listing and the keys file's identity it was read from (see listKeys). */
  private listed: { stamp: string; records: KeyRecord[] } | null = null;

  async revokeKey(prefix: string, at: string): Promise<boolean> {
    return this.updateKeys((keys) => {
      if (!Object.hasOwn(keys, prefix)) return false;
      keys[prefix].revoked_at ??= at;
      return true;
    });
  }

  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    try {
      // (servers take turns on their own lock, never on the keys CLI's)
      await withLock(
        path.join(this.dataDir, '.key-used.lock'),
        async () => {
          const used = await this.readUsed();
          // only forward: another server (or thread) may have written a later use (redis-key-store.ts)
          for (const [prefix, at] of lastUsed) {
            const cur = Object.hasOwn(used, prefix) ? used[prefix] : undefined;
            if (typeof cur !== 'string' || cur < at) used[prefix] = at;
          }
          // renamed into place (a reader never sees half), not fsynced: last uses are approximate
          await writeFileAtomic(this.usedFile, JSON.stringify(used) + '\n', false);
        },
        this.dataDir,
      );
    } catch (err) {
      throw wrap('writing last uses', err);
    }
  }
}
