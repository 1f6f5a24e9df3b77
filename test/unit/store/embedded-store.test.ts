/** The embedded key store's listing: the same records while keys.json is the same file. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateKey } from '../../../src/auth/api-key.js';
import { EmbeddedStore } from '../../../src/store/embedded-store.js';

test('listKeys gives the same array while keys.json is unchanged, a new one once it is replaced', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'keys-listing-'));
  try {
    const store = await new EmbeddedStore(dir).open();
    const k = generateKey();
    await store.keys.putKey({
      prefix: k.prefix,
      name: '',
      hash: k.hash,
      organization_ids: ['0a0a0a0a-0000-4000-8000-00000000000a'],
      scopes: ['contacts:read', 'messages:read'],
      created_at: '2026-01-01T00:00:00.000Z',
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    });
    const first = await store.keys.listKeys();
    assert.equal(await store.keys.listKeys(), first, 'not read again');
    assert.equal(await store.keys.revokeKey(k.prefix, '2026-02-01T00:00:00.000Z'), true);
    const second = await store.keys.listKeys();
    assert.notEqual(second, first);
    assert.equal(second[0].revoked_at, '2026-02-01T00:00:00.000Z');
    // another process's store object sees the same file
    assert.deepEqual(await (await new EmbeddedStore(dir).open()).keys.listKeys(), second);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
