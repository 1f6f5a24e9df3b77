/**
 * The per-key rate limit holds across serving threads: the token buckets live in one
 * SharedArrayBuffer, so N threads together grant a key its burst once, not N times
 * (test/e2e/rate-limit.test.ts checks it on the real server).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../../src/auth/rate-limit.js';
import { startModuleWorker } from '../../../src/runtime/module-worker.js';

function runWorker(data: unknown): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const w = startModuleWorker(import.meta.url, '../../helpers/rate-worker', { workerData: data });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

describe('rate limit in shared memory', () => {
  it('4 threads taking at once from the same buckets grant each key exactly its burst', async () => {
    // Refill is negligible over the test (one token in 1,000 s), so the burst is all there is.
    const limiter = new RateLimiter({ rps: 0.001, burst: 500 });
    const keys = ['k1aaaaaa', 'k2bbbbbb', 'a-much-longer-key-that-is-hashed'];
    const results = await Promise.all(
      [0, 1, 2, 3].map(() => runWorker({ shared: limiter.exportShared(), takes: 3_000, keys })),
    );
    for (const k of keys) {
      const total = results.reduce((n, r) => n + r[k], 0);
      assert.equal(total, 500, `${k}: granted ${total} over 4 threads, burst 500`);
    }
    assert.equal(limiter.take(keys[0]).ok, false, 'the main thread sees the same empty bucket');
  });

  it('a limiter attached to another one shares its buckets; a second limiter does not', () => {
    let now = 1_000_000;
    const a = new RateLimiter({ rps: 1, burst: 2, now: () => now });
    const b = RateLimiter.attach(a.exportShared(), () => now);
    const other = new RateLimiter({ rps: 1, burst: 2, now: () => now });
    assert.equal(a.take('abcdefgh').ok, true);
    assert.equal(b.take('abcdefgh').ok, true);
    assert.deepEqual(a.take('abcdefgh'), { ok: false, retryAfterSeconds: 1 });
    assert.deepEqual(b.take('abcdefgh'), { ok: false, retryAfterSeconds: 1 });
    assert.equal(other.take('abcdefgh').ok, true);
    now += 1000;
    assert.equal(b.take('abcdefgh').ok, true, 'refilled for both after a second');
    assert.equal(a.take('abcdefgh').ok, false);
  });

  it('keys that share a group keep separate buckets; a full group drops the stalest bucket', () => {
    let now = 0;
    // 8 slots: one group, so every key below competes for it.
    const rl = new RateLimiter({ rps: 1, burst: 1, maxBuckets: 8, now: () => now });
    for (let i = 0; i < 8; i++) {
      assert.equal(rl.take(`key${i}`).ok, true);
      now += 10; // key0 is the stalest
    }
    for (let i = 0; i < 8; i++) assert.equal(rl.take(`key${i}`).ok, false, `key${i} used its burst`);
    assert.equal(rl.size, 8);
    assert.equal(rl.take('key8').ok, true, 'a ninth key gets a bucket');
    assert.equal(rl.size, 8, 'never more than maxBuckets');
  });
});
