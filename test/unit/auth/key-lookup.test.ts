/**
 * KeyCache lookups of unknown prefixes (issue 13), in process with a counting store: one lookup
 * shared by concurrent requests, misses remembered briefly, a rate limit on lookups, a store
 * error refusing without caching, revocation still through the refresh, no false "lost key" alarm.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { generateKey } from '../../../src/auth/api-key.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import type { ServingKeyStore } from '../../../src/auth/key-store.js';

const ORG = '0a0a0a0a-0000-4000-8000-00000000000a';

function record(prefix: string, hash: string, extra: Partial<KeyRecord> = {}): KeyRecord {
  return {
    prefix,
    name: 't',
    hash,
    organization_ids: [ORG],
    scopes: ['contacts:read', 'messages:read'],
    created_at: '2026-01-01T00:00:00.000Z',
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
    ...extra,
  };
}

/** A store whose key set the test edits, counting getKey calls; listKeys can be held to simulate a slow refresh. */
function countingStore() {
  const keys = new Map<string, KeyRecord>();
  const calls: string[] = [];
  let failGet = false;
  let hold: Promise<void> | null = null;
  const store = {
    listKeys: async () => {
      const snapshot = [...keys.values()].map((r) => ({ ...r }));
      if (hold) await hold;
      return snapshot;
    },
    getKey: async (prefix: string) => {
      calls.push(prefix);
      await new Promise((r) => setTimeout(r, 20));
      if (failGet) throw new Error('store: redis unavailable');
      return keys.get(prefix) ?? null;
    },
    touchKeys: async () => {},
  } as unknown as ServingKeyStore;
  return {
    store,
    keys,
    calls,
    setFail: (v: boolean) => (failGet = v),
    setHold: (p: Promise<void> | null) => (hold = p),
  };
}

const warnings: string[] = [];
const logger = pino(
  { level: 'debug' },
  {
    write: (l: string) => {
      if (l.includes('"level":40')) warnings.push(l);
    },
  },
);

describe('key lookups of unknown prefixes', () => {
  it('concurrent first requests share one store read; the key then authenticates', async () => {
    const s = countingStore();
    const cache = new KeyCache(s.store, { logger });
    await cache.refresh();
    const k = generateKey();
    s.keys.set(k.prefix, record(k.prefix, k.hash));
    const results = Array.from({ length: 10 }, () => cache.authenticate(`Bearer ${k.key}`));
    assert.ok(results.every((r) => !r.ok && r.lookup !== undefined));
    assert.equal(new Set(results.map((r) => (r.ok ? null : r.lookup))).size, 1, 'one shared promise');
    await (results[0] as { lookup: Promise<void> }).lookup;
    assert.deepEqual(s.calls, [k.prefix]);
    const after = cache.authenticate(`Bearer ${k.key}`);
    assert.equal(after.ok, true);
    // A wrong secret for the now-known prefix: 401, no new lookup.
    const wrong = cache.authenticate(`Bearer ${k.key.slice(0, -1)}${k.key.endsWith('a') ? 'b' : 'a'}`);
    assert.deepEqual([wrong.ok, 'lookup' in wrong], [false, false]);
    assert.equal(s.calls.length, 1);
  });

  it('a miss is remembered for missTtlMs: no second read until then', async () => {
    const s = countingStore();
    const cache = new KeyCache(s.store, { logger, missTtlMs: 300 });
    await cache.refresh();
    const k = generateKey();
    const first = cache.authenticate(`Bearer ${k.key}`);
    assert.ok(!first.ok && first.lookup);
    await first.lookup;
    const again = cache.authenticate(`Bearer ${k.key}`);
    assert.deepEqual([again.ok, 'lookup' in again], [false, false]);
    assert.equal(s.calls.length, 1);
    await new Promise((r) => setTimeout(r, 350));
    const later = cache.authenticate(`Bearer ${k.key}`);
    assert.ok(!later.ok && later.lookup, 'looked up again after the miss expired');
    await later.lookup;
    assert.equal(s.calls.length, 2);
  });

  it('lookups are rate-limited: random prefixes cost at most the bucket', async () => {
    const s = countingStore();
    const cache = new KeyCache(s.store, { logger, lookupsPerSecond: 5 });
    await cache.refresh();
    const now = Date.now();
    const results = Array.from({ length: 50 }, () => cache.authenticate(`Bearer ${generateKey().key}`, now));
    assert.equal(results.filter((r) => !r.ok && r.lookup).length, 5);
    assert.ok(results.every((r) => !r.ok));
    await Promise.all(results.map((r) => (r.ok ? null : r.lookup)));
    assert.equal(s.calls.length, 5);
    // One second later the bucket is full again (5), not more.
    const later = Array.from({ length: 50 }, () => cache.authenticate(`Bearer ${generateKey().key}`, now + 1000));
    assert.equal(later.filter((r) => !r.ok && r.lookup).length, 5);
    await Promise.all(later.map((r) => (r.ok ? null : r.lookup)));
  });

  it('a store error refuses the request and is not cached as a miss', async () => {
    const s = countingStore();
    const cache = new KeyCache(s.store, { logger });
    await cache.refresh();
    const k = generateKey();
    s.keys.set(k.prefix, record(k.prefix, k.hash));
    s.setFail(true);
    const r1 = cache.authenticate(`Bearer ${k.key}`);
    assert.ok(!r1.ok && r1.lookup);
    await r1.lookup;
    // the request that waited learns the key could not be checked (503), not that it is bad (401)
    const waited = cache.authenticate(`Bearer ${k.key}`, Date.now(), false);
    assert.ok(!waited.ok && waited.unavailable === true);
    s.setFail(false);
    const r2 = cache.authenticate(`Bearer ${k.key}`);
    assert.ok(!r2.ok && r2.lookup, 'looked up again at once');
    await r2.lookup;
    assert.equal(cache.authenticate(`Bearer ${k.key}`).ok, true);
    // a prefix the store answers as absent after a failure: 401 again, not 503
    const other = generateKey();
    s.setFail(true);
    const f = cache.authenticate(`Bearer ${other.key}`);
    assert.ok(!f.ok && f.lookup);
    await f.lookup;
    s.setFail(false);
    await new Promise((r) => setTimeout(r, 1100)); // past the lookup rate limiter's refill
    const m = cache.authenticate(`Bearer ${other.key}`);
    assert.ok(!m.ok && m.lookup);
    await m.lookup;
    const absent = cache.authenticate(`Bearer ${other.key}`, Date.now(), false);
    assert.ok(!absent.ok && absent.unavailable === undefined);
  });

  it('a looked-up key survives a stale refresh without a "lost" warning, and its revocation applies at the next refresh', async () => {
    const s = countingStore();
    const cache = new KeyCache(s.store, { logger });
    await cache.refresh();
    let release!: () => void;
    s.setHold(new Promise<void>((r) => (release = r)));
    // A refresh reads the list before the key exists, and finishes after the lookup.
    const stale = cache.refresh();
    const k = generateKey();
    s.keys.set(k.prefix, record(k.prefix, k.hash));
    const r = cache.authenticate(`Bearer ${k.key}`);
    assert.ok(!r.ok && r.lookup);
    await r.lookup;
    release();
    await stale;
    s.setHold(null);
    assert.equal(cache.authenticate(`Bearer ${k.key}`).ok, true);
    assert.deepEqual(
      warnings.filter((w) => w.includes('keys missing from the store')),
      [],
    );
    s.keys.set(k.prefix, record(k.prefix, k.hash, { revoked_at: new Date().toISOString() }));
    await cache.refresh();
    assert.equal(cache.authenticate(`Bearer ${k.key}`).ok, false);
  });
});
