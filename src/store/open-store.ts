/** Opens the store the validated configuration names (CONTRACT 8): REDIS_URL set means Redis, else files under DATA_DIR. */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedStore } from './embedded-store.js';
import type { StoreAccess, StoreConfig, Stores } from './stores.js';

/**
 * Opens the stores `config` names; rejects with a "store: ..." message when they cannot be used.
 * With `onDown` (the server), a store that cannot be reached yet is returned anyway, `onDown` is
 * told why, and every call fails with "store: ..." until it comes back: the caller retries.
 * `access` 'read': a tool that only lists (see EmbeddedStore.open).
 */
export async function openStores(
  config: StoreConfig,
  onDown?: (err: Error, readOnly: boolean) => void,
  access: StoreAccess = 'write',
): Promise<Stores> {
  const url = config.redisUrl;
  if (url !== null && url !== '') {
    // Redis's modules (ioredis and its dependencies) load only when a Redis store is named: a
    // process on the embedded store, and each of its worker threads, never loads them
    const [{ RedisStore }, { redactUrl }] = await Promise.all([
      import('./redis-store.js'),
      import('./redis-connection.js'),
    ]);
    if (!onDown) return RedisStore.connect(url);
    const store = await RedisStore.connect(url, { background: true });
    if (!store.connected)
      onDown(new Error(`store: redis unavailable at ${redactUrl(url)}; retrying in the background`), false);
    return store;
  }
  const store = new EmbeddedStore(config.dataDir);
  if (!onDown)
    // (the tools: a file in the way is named as the server names it, not as mkdir's ENOTDIR)
    return store.open(access).catch(async (err: Error) => {
      const problem = await dataDirFileProblem(config.dataDir);
      throw problem === null ? err : new Error(problem);
    });
  return store.open().catch(async (err: Error) => {
    // A file where the folder, one of its parents or one of its subfolders should be is a bad
    // value (CONTRACT 8): the start fails naming DATA_DIR (it answered 503 for ever). A folder
    // that cannot be reached yet (a symlink to a volume not mounted yet) is retried.
    const problem = await dataDirFileProblem(config.dataDir);
    if (problem !== null) throw new Error(problem);
    // A folder that can be read but not written (a read-only mount) serves what it holds: said
    // as such, not as a store that is down (the server never answered 503 for it: an audit)
    const readable = await store.open('read').then(
      () => true,
      () => false,
    );
    onDown(err, readable);
    return store;
  });
}

/**
 * "store: cannot use DATA_DIR …: … is a file, not a folder" when a file stands where DATA_DIR, a
 * parent or one of its subfolders should be; null otherwise. The server's start and the tools that
 * only list (newDataDirNote) refuse such a DATA_DIR alike.
 */
export async function dataDirFileProblem(dataDir: string): Promise<string | null> {
  const file = await fileInTheWay(dataDir);
  return file === null
    ? null
    : `store: cannot use DATA_DIR ${JSON.stringify(dataDir)}: ${JSON.stringify(file)} is a file, not a folder`;
}

/**
 * The nearest existing path on the way to DATA_DIR's subfolders that is not a folder, or null
 * when every existing one is a folder (what is missing can still appear).
 */
async function fileInTheWay(dataDir: string): Promise<string | null> {
  for (const sub of ['snapshots', 'servers']) {
    for (let p = path.resolve(dataDir, sub); ; p = path.dirname(p)) {
      try {
        if (!(await stat(p)).isDirectory()) return p;
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if ((code !== 'ENOENT' && code !== 'ENOTDIR') || p === path.dirname(p)) break;
      }
    }
  }
  return null;
}
