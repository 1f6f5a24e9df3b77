/** Opens the store the validated configuration names (CONTRACT 8): REDIS_URL set means Redis, else files under DATA_DIR. */
import { EmbeddedStore } from './embedded-store.js';
import type { StoreConfig, Stores } from './stores.js';

/**
 * Opens the stores `config` names; rejects with a "store: ..." message when they cannot be used.
 * With `onDown` (the server), a store that cannot be reached yet is returned anyway, `onDown` is
 * told why, and every call fails with "store: ..." until it comes back: the caller retries.
 */
export async function openStores(config: StoreConfig, onDown?: (err: Error) => void): Promise<Stores> {
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
      onDown(new Error(`store: redis unavailable at ${redactUrl(url)}; retrying in the background`));
    return store;
  }
  const store = new EmbeddedStore(config.dataDir);
  if (!onDown) return store.open();
  return store.open().catch((err: Error) => {
    onDown(err);
    return store;
  });
}
