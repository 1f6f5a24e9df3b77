/**
 * API key records in one file under DATA_DIR, shared safely by several processes:
 *
 *   keys.json (+ .keys.lock)              {"<prefix>": KeyRecord, ...}
 *   key-used/<host>.<pid ns>.<pid>.json   {"<prefix>": last_used_at, ...}, one file a server process
 *
 * last_used_at lives apart, as in Redis (key-used), and each server process writes only its own
 * file, with no lock: a server with one thread under heavy load held `.keys.lock` ~10 s a flush
 * (each file call of the write waited for a turn of its busy loop), so `keys revoke` waited that
 * long or failed; a shared file under a lock of its own then starved the other servers' flushes
 * (held 15 s a flush, theirs timed out: two reviews). Readers take the latest use over every
 * file (and keys.json, where earlier versions wrote it); a server folds in the files of its host's
 * processes that ended, and removes them. The server's key listing reads synchronously: under
 * that load each asynchronous file call cost a turn of ~1 s, and a revoked key was accepted 4 s
 * after `keys revoke` returned (CONTRACT 7: 2 s).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { type KeyRecord, unreadableKeyRecord } from '../auth/key-record.js';
import { pidAlive, pidNamespace, storeError as wrap, withLock, writeFileAtomic } from './file-utils.js';
import type { KeyStore, ReadOptions } from '../auth/key-store.js';

/** A last use as toISOString writes it, the only form taken from a file (its text order is its time order). */
const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The later of the two uses: `used[prefix]` raised to `at` when `at` is an instant after it. */
function raise(used: Map<string, string>, prefix: string, at: unknown): void {
  if (typeof at !== 'string' || !INSTANT.test(at)) return;
  const cur = used.get(prefix);
  if (cur === undefined || cur < at) used.set(prefix, at);
}

/** The last uses of one file, merged into `into`; a file that cannot be read adds nothing. */
function mergeUsedFile(file: string, into: Map<string, string>): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return;
  for (const [prefix, at] of Object.entries(parsed)) raise(into, prefix, at);
}

/** Key records in `dataDir`/keys.json. */
export class EmbeddedKeyStore implements KeyStore {
  private readonly dataDir: string;
  private readonly keysFile: string;
  private readonly usedDir: string;
  /** what this process has written to its file of last uses (null before its first flush) */
  private ownUsed: Map<string, string> | null = null;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.keysFile = path.join(this.dataDir, 'keys.json');
    this.usedDir = path.join(this.dataDir, 'key-used');
  }

  /** The start of the names of this host's (and PID namespace's) files of last uses. */
  private static hostPart(): string {
    const ns = (pidNamespace() ?? '').replace(/\D/g, '') || 'x';
    return `${hostname()
      .replace(/[^A-Za-z0-9_-]/g, '_')
      .slice(0, 64)}.${ns}.`;
  }

  /** prefix -> latest last use over every server's file; empty without any. */
  private readUsed(): Map<string, string> {
    const used = new Map<string, string>();
    let names: string[];
    try {
      names = readdirSync(this.usedDir);
    } catch {
      return used;
    }
    for (const name of names) if (name.endsWith('.json')) mergeUsedFile(path.join(this.usedDir, name), used);
    return used;
  }

  /**
   * The record stored for `prefix`, with its last use in `used` when that is later than the one it
   * carries; a value that is not an object is a stand-in the key cache refuses, named by its prefix.
   */
  private withUsed(prefix: string, record: KeyRecord, used: Map<string, string>): KeyRecord {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      return unreadableKeyRecord(prefix, 'not a JSON object');
    const at = used.get(prefix);
    if (at === undefined || (record.last_used_at != null && record.last_used_at >= at)) return record;
    return { ...record, last_used_at: at };
  }

  /**
   * keys.json's records, read without a turn of the event loop (the server's listing and lookups:
   * see the header; the keys CLI's writes read it the same way, under their lock).
   */
  private readKeysSync(): Record<string, KeyRecord> {
    try {
      return keysObject(JSON.parse(readFileSync(this.keysFile, 'utf8')));
    } catch (err) {
      // no keys file yet: no keys, but only in a folder that is there (a DATA_DIR not reachable yet,
      // a symlink to a volume not mounted, is the store down: a key cannot be checked, 503, not 401)
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && isDirSync(this.dataDir)) return {};
      throw wrap(`reading ${this.keysFile}`, err);
    }
  }

  // Read-modify-write under a lock: the keys CLI's commands write concurrently.
  private async updateKeys<T>(fn: (keys: Record<string, KeyRecord>) => T): Promise<T> {
    try {
      return await withLock(
        path.join(this.dataDir, '.keys.lock'),
        async () => {
          const keys = this.readKeysSync();
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

  async getKey(prefix: string, options: ReadOptions = {}): Promise<KeyRecord | null> {
    const keys = this.readKeysSync();
    if (!Object.hasOwn(keys, prefix)) return null;
    return this.withUsed(prefix, keys[prefix], options.lastUses === false ? new Map() : this.readUsed());
  }

  /**
   * Every record; the same array as the last call while keys.json is the same file (it is only
   * ever replaced by a rename: a new inode). A server lists the keys every second: re-reading and
   * parsing 50,000 records (24 MB) each time took most of a core. Its last_used_at are those of
   * when it was read (a server does not read them; `keys list` is a process of its own).
   */
  async listKeys(options: ReadOptions = {}): Promise<KeyRecord[]> {
    const stamp = keysStamp(this.keysFile);
    const lastUses = options.lastUses !== false;
    const last = this.listed;
    if (stamp !== null && last !== null && last.stamp === stamp && last.lastUses === lastUses) return last.records;
    const keys = this.readKeysSync();
    const used = lastUses ? this.readUsed() : new Map<string, string>();
    const records = Object.entries(keys).map(([prefix, r]) => this.withUsed(prefix, r, used));
    this.listed = stamp === null ? null : { stamp, lastUses, records };
    return records;
  }

  /** The last listing and the keys file's identity it was read from (see listKeys). */
  private listed: { stamp: string; lastUses: boolean; records: KeyRecord[] } | null = null;

  async revokeKey(prefix: string, at: string): Promise<boolean> {
    return this.updateKeys((keys) => {
      if (!Object.hasOwn(keys, prefix)) return false;
      keys[prefix].revoked_at ??= at;
      return true;
    });
  }

  /**
   * Writes the last uses into this process's own file, synchronously (a few small file calls, no
   * lock: no other process writes it), only forward; folds in and removes the files of this host's
   * server processes that ended. A write that fails is retried with the next flush (the uses stay
   * in ownUsed).
   */
  async touchKeys(lastUsed: Map<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    const part = EmbeddedKeyStore.hostPart();
    const file = path.join(this.usedDir, `${part}${process.pid}.json`);
    if (this.ownUsed === null) {
      this.ownUsed = new Map();
      mergeUsedFile(file, this.ownUsed); // a process before this one with the same PID
    }
    const own = this.ownUsed;
    for (const [prefix, at] of lastUsed) raise(own, prefix, at);
    try {
      mkdirSync(this.usedDir, { recursive: true });
      const ended: string[] = [];
      for (const name of readdirSync(this.usedDir)) {
        if (!name.startsWith(part)) continue;
        const pid = Number(name.slice(part.length).replace(/\.json(\.tmp)?$/, ''));
        if (!Number.isInteger(pid) || pid === process.pid || pidAlive(pid)) continue;
        if (name.endsWith('.json')) mergeUsedFile(path.join(this.usedDir, name), own);
        ended.push(name);
      }
      // renamed into place (a reader never sees half), not fsynced: last uses are approximate
      writeFileSync(`${file}.tmp`, JSON.stringify(Object.fromEntries(own)) + '\n');
      renameSync(`${file}.tmp`, file);
      for (const name of ended) rmSync(path.join(this.usedDir, name), { force: true });
    } catch (err) {
      throw wrap('writing last uses', err);
    }
  }
}

/**
 * keys.json's content, which must be an object of records: `[]` took a create's key and stored
 * nothing, `null` failed every command with a TypeError (a regression audit).
 */
function keysObject(parsed: unknown): Record<string, KeyRecord> {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('its content is not a JSON object of key records (fix or restore it)');
  return parsed as Record<string, KeyRecord>;
}

/** keys.json's identity (inode, mtime, size), or null when it cannot be read; synchronous (see the header). */
function keysStamp(file: string): string | null {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return null;
  }
}

function isDirSync(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
