/** Picks the store from the environment (CONTRACT 8): REDIS_URL set means Redis, else files under DATA_DIR. */
import { EmbeddedStore } from './embedded-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './store.js';

/** Opens the store named by `env`; rejects with a "store: ..." message when it cannot be used. */
export async function openStore(env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const url = env.REDIS_URL;
  if (url !== undefined && url !== '') return RedisStore.connect(url);
  return new EmbeddedStore(env.DATA_DIR || './data').open();
}
