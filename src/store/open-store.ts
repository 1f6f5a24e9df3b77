/** Picks the store from the environment (CONTRACT 8): REDIS_URL set means Redis, else files under DATA_DIR. */
import { EmbeddedStore } from './embedded-store.js';
import { RedisStore, redactUrl } from './redis-store.js';
import type { Store } from './store.js';

/**
 * Opens the store named by `env`; rejects with a "store: ..." message when it cannot be used.
 * With `onDown` (the server), a store that cannot be reached yet is returned anyway, `onDown` is
 * told why, and every call fails with "store: ..." until it comes back: the caller retries.
 */
export async function openStore(env: NodeJS.ProcessEnv = process.env, onDown?: (err: Error) => void): Promise<Store> {
  const url = env.REDIS_URL;
  if (url !== undefined && url !== '') {
    if (!onDown) return RedisStore.connect(url);
    const store = await RedisStore.connect(url, { background: true });
    if (!store.connected)
      onDown(new Error(`store: redis unavailable at ${redactUrl(url)}; retrying in the background`));
    return store;
  }
  const store = new EmbeddedStore(env.DATA_DIR || './data');
  if (!onDown) return store.open();
  return store.open().catch((err: Error) => {
    onDown(err);
    return store;
  });
}
