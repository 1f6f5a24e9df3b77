/** A worker thread of test/unit/auth/rate-limit.test.ts: takes `takes` tokens of one key from shared buckets. */
import { parentPort, workerData } from 'node:worker_threads';
import { RateLimiter, type SharedRateLimit } from '../../src/auth/rate-limit.js';

const { shared, takes, keys } = workerData as { shared: SharedRateLimit; takes: number; keys: string[] };
const limiter = RateLimiter.attach(shared);
const granted: Record<string, number> = {};
for (const k of keys) granted[k] = 0;
for (let i = 0; i < takes; i++) {
  const k = keys[i % keys.length];
  if (limiter.take(k).ok) granted[k]++;
}
parentPort!.postMessage(granted);
