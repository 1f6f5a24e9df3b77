/**
 * API key records in one file under DATA_DIR, shared safely by several processes:
 *
 *   keys.json (+ .keys.lock)           {"<prefix>": KeyRecord, ...}
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { KeyRecord } from '../auth/key-record.js';
import { fileStamp, isDir, storeError as wrap, withLock, writeFileAtomic } from './file-utils.js';
import type { KeyStore } from '../auth/key-store.js';

/** Key records in `dataDir`/keys.json. */
export class EmbeddedKeyStore implements KeyStore {
  private readonly dataDir: string;
  private readonly keysFile: string;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.keysFile = path.join(this.dataDir, 'keys.json');
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
    const keys = await this.readKeys();
    return Object.hasOwn(keys, prefix) ? keys[prefix] : null;
  }

  /**
   * Every record; the same array as the last call while keys.json is the same file (it is only
   * ever replaced by a rename: a new inode). A server lists the keys every second: re-reading and
   * parsing 50,000 records (24 MB) each time took most of a core.
   */
  async listKeys(): Promise<KeyRecord[]> {
    const stamp = await fileStamp(this.keysFile).catch(() => null);
    if (stamp !== null && this.listed !== null && this.listed.stamp === stamp) return this.listed.records;
    const records = Object.values(await this.readKeys());
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
    await this.updateKeys((keys) => {
      // only forward: another server (or thread) may have written a later use (redis-key-store.ts)
      for (const [prefix, at] of lastUsed) {
        if (!Object.hasOwn(keys, prefix)) continue;
        const cur = keys[prefix].last_used_at;
        if (cur == null || cur < at) keys[prefix].last_used_at = at;
      }
    });
  }
}
