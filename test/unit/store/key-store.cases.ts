/** The key store's shared cases: every KeyStore backend runs them (test/unit/store/store.test.ts). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KeyRecord } from '../../../src/auth/key-record.js';
import type { KeyStore } from '../../../src/auth/key-store.js';
import { uuid } from '../../fixtures/gen-data.js';

function key(prefix: string, org: string): KeyRecord {
  return {
    prefix,
    name: `key ${prefix}`,
    hash: 'ab'.repeat(32),
    organization_ids: [org],
    scopes: ['contacts:read', 'messages:read'],
    created_at: '2024-01-01T00:00:00.000Z',
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
  };
}

/** Registers the cases; `keys()` is read once the enclosing suite has opened it. */
export function keyStoreCases(keys: () => KeyStore): void {
  describe('key store', () => {
    test('put, get, list, revoke, touch', async () => {
      const org = uuid(9, 0);
      await keys().putKey(key('abcd1234', org));
      await keys().putKey(key('wxyz0000', org));
      assert.deepEqual(await keys().getKey('abcd1234'), key('abcd1234', org));
      assert.equal(await keys().getKey('nope0000'), null);
      assert.deepEqual((await keys().listKeys()).map((k) => k.prefix).sort(), ['abcd1234', 'wxyz0000']);
      assert.equal(await keys().revokeKey('abcd1234', '2024-02-02T00:00:00.000Z'), true);
      assert.equal(await keys().revokeKey('nope0000', '2024-02-02T00:00:00.000Z'), false);
      await keys().touchKeys(new Map([['abcd1234', '2024-03-03T00:00:00.000Z']]));
      const k = await keys().getKey('abcd1234');
      assert.equal(k?.revoked_at, '2024-02-02T00:00:00.000Z');
      assert.equal(k?.last_used_at, '2024-03-03T00:00:00.000Z');
    });

    test('the listing is the same one until a key is created or revoked (a server lists every second)', async () => {
      const org = uuid(9, 2);
      await keys().putKey(key('same0000', org));
      const first = await keys().listKeys();
      assert.equal(await keys().listKeys(), first, 'not read again');
      await keys().putKey(key('same0001', org));
      const second = await keys().listKeys();
      assert.notEqual(second, first);
      assert.ok(second.some((r) => r.prefix === 'same0001'));
      assert.equal(await keys().revokeKey('same0000', '2024-08-08T00:00:00.000Z'), true);
      const third = await keys().listKeys();
      assert.equal(third.find((r) => r.prefix === 'same0000')?.revoked_at, '2024-08-08T00:00:00.000Z');
    });

    test('a touch keeps a revocation, a revocation keeps last_used_at; an unknown prefix stays unknown', async () => {
      const org = uuid(9, 1);
      await keys().putKey(key('touch000', org));
      await keys().touchKeys(new Map([['touch000', '2024-04-04T00:00:00.000Z']]));
      assert.equal(await keys().revokeKey('touch000', '2024-05-05T00:00:00.000Z'), true);
      assert.equal(await keys().revokeKey('touch000', '2024-06-06T00:00:00.000Z'), true, 'revoking again is fine');
      await keys().touchKeys(
        new Map([
          ['touch000', '2024-07-07T00:00:00.000Z'],
          ['ghost000', '2024-07-07T00:00:00.000Z'],
        ]),
      );
      const k = await keys().getKey('touch000');
      assert.equal(k?.revoked_at, '2024-05-05T00:00:00.000Z', 'the first revocation stands');
      assert.equal(k?.last_used_at, '2024-07-07T00:00:00.000Z');
      assert.equal(await keys().getKey('ghost000'), null);
      assert.ok(!(await keys().listKeys()).some((r) => r.prefix === 'ghost000'));
    });

    test('last_used_at only moves forward: a server flushing an older use leaves a later one', async () => {
      // each server flushes the last use it saw: one that saw an earlier use, flushing after
      // another server, took last_used_at back in time (a review, on both stores)
      const org = uuid(9, 3);
      await keys().putKey(key('order000', org));
      await keys().touchKeys(new Map([['order000', '2024-07-07T10:17:43.986Z']]));
      await keys().touchKeys(new Map([['order000', '2024-07-07T10:17:43.460Z']]));
      assert.equal((await keys().getKey('order000'))?.last_used_at, '2024-07-07T10:17:43.986Z');
      await keys().touchKeys(new Map([['order000', '2024-07-07T10:17:44.001Z']]));
      assert.equal((await keys().getKey('order000'))?.last_used_at, '2024-07-07T10:17:44.001Z');
    });
  });
}
