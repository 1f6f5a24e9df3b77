/**
 * KeyCache's successful path: a key's required scopes (checked when its record is installed) and
 * its last use (kept as a time, written as an ISO instant, the latest a prefix, at flush).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { generateKey } from '../../../src/auth/api-key.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import type { ServingKeyStore } from '../../../src/auth/key-store.js';

const ORG = '0a0a0a0a-0000-4000-8000-00000000000a';

function record(prefix: string, hash: string, scopes: string[]): KeyRecord {
  return {
    prefix,
    name: 't',
    hash,
    organization_ids: [ORG],
    scopes,
    created_at: '2026-01-01T00:00:00.000Z',
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
  };
}

test('required scopes per key, and last use flushed as the latest ISO instant a prefix', async () => {
  const full = generateKey();
  const partial = generateKey();
  const touched: Map<string, string>[] = [];
  const store = {
    listKeys: async () => [
      record(full.prefix, full.hash, ['contacts:read', 'messages:read']),
      record(partial.prefix, partial.hash, ['contacts:read']),
    ],
    getKey: async () => null,
    touchKeys: async (m: Map<string, string>) => {
      touched.push(new Map(m));
    },
  } as unknown as ServingKeyStore;
  const cache = new KeyCache(store, { logger: pino({ level: 'silent' }) });
  await cache.refresh();

  const t1 = Date.parse('2026-03-01T10:00:00.000Z');
  const t2 = Date.parse('2026-03-01T10:00:05.250Z');
  const a = cache.authenticate(`Bearer ${full.key}`, t1);
  const b = cache.authenticate(`Bearer ${full.key}`, t2);
  const c = cache.authenticate(`Bearer ${partial.key}`, t1);
  assert.deepEqual(
    [a, b, c].map((r) => (r.ok ? r.hasRequiredScopes : 'refused')),
    [true, true, false],
  );
  // a wrong secret is refused and not counted as a use
  const wrong = cache.authenticate(`Bearer ${full.key.slice(0, -1)}${full.key.endsWith('a') ? 'b' : 'a'}`, t2 + 1000);
  assert.equal(wrong.ok, false);

  await cache.flush();
  assert.deepEqual(touched, [
    new Map([
      [full.prefix, '2026-03-01T10:00:05.250Z'],
      [partial.prefix, '2026-03-01T10:00:00.000Z'],
    ]),
  ]);
  // nothing new since: no write
  await cache.flush();
  assert.equal(touched.length, 1);
});

test('a malformed record is refused and logged once; the other keys are served and revoked as usual', async () => {
  const good = generateKey();
  const revokedLater = generateKey();
  const bad = generateKey();
  const badOrgs = generateKey();
  let revoked = false;
  const full = ['contacts:read', 'messages:read'];
  const store = {
    listKeys: async () => [
      record(good.prefix, good.hash, full),
      {
        ...record(revokedLater.prefix, revokedLater.hash, full),
        revoked_at: revoked ? '2026-03-01T00:00:00.000Z' : null,
      },
      // a hand-edited store: a null hash made every refresh throw, so the revocation above never
      // took effect, and a restarted server refused every key
      { ...record(bad.prefix, bad.hash, full), hash: null },
      { ...record(badOrgs.prefix, badOrgs.hash, full), organization_ids: 'nope' },
    ],
    getKey: async () => null,
    touchKeys: async () => {},
  } as unknown as ServingKeyStore;
  const lines: Array<{ msg: string; records?: string[] }> = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const cache = new KeyCache(store, { logger });
  await cache.refresh();
  const ok = (k: { key: string }) => cache.authenticate(`Bearer ${k.key}`).ok;
  assert.deepEqual([ok(good), ok(revokedLater), ok(bad), ok(badOrgs)], [true, true, false, false]);
  revoked = true;
  await cache.refresh();
  await cache.refresh();
  assert.deepEqual([ok(good), ok(revokedLater), ok(bad), ok(badOrgs)], [true, false, false, false]);
  // one warning for the two records, not one a refresh
  const warned = lines.filter((l) => l.msg.startsWith('keys: malformed key records'));
  assert.equal(warned.length, 1, JSON.stringify(lines));
  assert.deepEqual(warned[0].records, [
    `${bad.prefix}: hash: Invalid type: Expected string but received null`,
    `${badOrgs.prefix}: organization_ids: Invalid type: Expected Array but received "nope"`,
  ]);
});

test('the same listing again (an unchanged keys file) is neither rebuilt nor posted to the threads', async () => {
  const k = generateKey();
  let listing = [record(k.prefix, k.hash, ['contacts:read', 'messages:read'])];
  const store = {
    listKeys: async () => listing,
    getKey: async () => null,
    touchKeys: async () => {},
  } as unknown as ServingKeyStore;
  let posted = 0;
  const cache = new KeyCache(store, { logger: pino({ level: 'silent' }), onListing: () => posted++ });
  await cache.refresh();
  await cache.refresh();
  await cache.refresh();
  assert.equal(posted, 1, '50,000 keys re-installed and posted every second took 1.5 cores');
  assert.equal(cache.authenticate(`Bearer ${k.key}`).ok, true);
  listing = [{ ...listing[0], revoked_at: '2026-03-01T00:00:00.000Z' }];
  await cache.refresh();
  assert.equal(posted, 2);
  assert.equal(cache.authenticate(`Bearer ${k.key}`).ok, false, 'a new listing is installed');
});

/** The main thread's cache over a store listing `listKeys`, and every listing it sends the threads. */
function mainCache(listKeys: () => Promise<KeyRecord[]>): { main: KeyCache; sent: KeyRecord[][] } {
  const store = { listKeys, getKey: async () => null, touchKeys: async () => {} } as unknown as ServingKeyStore;
  const sent: KeyRecord[][] = [];
  const main = new KeyCache(store, { logger: pino({ level: 'silent' }), onListing: (l) => sent.push(l.records) });
  return { main, sent };
}

test("a thread's lookup of a key it will refuse reaches every thread first: a listing read after it is sent", async () => {
  const fresh = generateKey();
  const active = generateKey();
  const full = ['contacts:read', 'messages:read'];
  // the store: `fresh` is revoked once `revoked` is set; the main thread's cache has listed it before
  let revoked = false;
  let listings = 0;
  const { main, sent } = mainCache(async () => {
    listings++;
    return [
      { ...record(fresh.prefix, fresh.hash, full), revoked_at: revoked ? '2026-03-01T10:00:00.000Z' : null },
      record(active.prefix, active.hash, full),
    ];
  });
  await main.refresh();
  // a serving thread's own cache, with what the main thread sent it
  const thread = new KeyCache({} as ServingKeyStore, { logger: pino({ level: 'silent' }) });
  thread.install({ records: sent[0], startedAt: 0 });
  assert.equal(thread.authenticate(`Bearer ${fresh.key}`).ok, true);

  // an active key looked up: nothing to send
  const before = listings;
  await main.afterLookup(active.prefix, record(active.prefix, active.hash, full), Date.now());
  // an unknown prefix that nobody holds: nothing to send either
  await main.afterLookup('abcdefgh', null, Date.now());
  assert.equal(listings, before);

  // another thread's lookup reads `fresh` revoked: by the time afterLookup resolves (then the
  // thread answers 401), a listing with the revocation has been sent to every thread
  revoked = true;
  const lookedUp = Date.now();
  await main.afterLookup(fresh.prefix, { ...record(fresh.prefix, fresh.hash, full), revoked_at: 'x' }, lookedUp);
  assert.equal(listings, before + 1);
  thread.install({ records: sent[sent.length - 1], startedAt: lookedUp });
  assert.equal(thread.authenticate(`Bearer ${fresh.key}`).ok, false);
  assert.equal(thread.authenticate(`Bearer ${active.key}`).ok, true);
});

test('afterLookup waits out a listing that began before the lookup, and reads anew', async () => {
  const key = generateKey();
  const full = ['contacts:read', 'messages:read'];
  let revoked = false;
  let release: () => void = () => {};
  const started: number[] = [];
  const { main, sent } = mainCache(() => {
    started.push(Date.now());
    // the second read hangs until released, holding what it read before the revocation
    const out = [{ ...record(key.prefix, key.hash, full), revoked_at: revoked ? '2026-03-01T10:00:00.000Z' : null }];
    return started.length === 2 ? new Promise((r) => (release = () => r(out))) : Promise.resolve(out);
  });
  await main.refresh();
  const slow = main.refresh(); // read before the revocation, not yet back
  await new Promise((r) => setTimeout(r, 5));
  revoked = true;
  const done = main.afterLookup(key.prefix, { ...record(key.prefix, key.hash, full), revoked_at: 'x' }, Date.now());
  release();
  await Promise.all([slow, done]);
  assert.equal(started.length, 3, 'a third read, begun after the lookup');
  assert.notEqual(sent[sent.length - 1][0].revoked_at, null, 'the last listing sent has the revocation');
});
