/**
 * Organization shards (ORGANIZATIONS) over real HTTP: a sharded replica loads and answers only its
 * organizations; a granted request for another organization gets 421 misdirected_request, after
 * the 401 / 403-scope / 400 / 403-organization checks; an unsharded replica gives the same bodies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  gen,
  importCli,
  loadDataset,
  openHarness,
  organizationsOf,
  wordsOf,
  reloadCli,
  search,
  tempDir,
  type StoreHarness,
} from '../helpers/e2e.js';
import { createKey, startServer, type CreatedKey, type RunningServer } from '../helpers/server.js';

describe('organization shards (ORGANIZATIONS)', () => {
  const work = tempDir('shards-gen-');
  let h: StoreHarness;
  let orgs: string[];
  let words: Map<string, string[]>;
  let all: RunningServer, sharded: RunningServer;
  let key: CreatedKey, narrow: CreatedKey, scopeless: CreatedKey;

  before(async () => {
    await gen(work.dir, { messages: 600, contacts: 40, organizations: 3, seed: 1414 });
    const d = loadDataset(work.dir);
    orgs = organizationsOf(d);
    words = wordsOf(d, orgs, 3);
    h = await openHarness('embedded');
    const imp = await importCli(h.env, d);
    assert.equal(imp.code, 0, imp.stderr);
    key = await createKey(h.env, orgs, 'contacts:read,messages:read');
    narrow = await createKey(h.env, [orgs[0]], 'contacts:read,messages:read');
    scopeless = await createKey(h.env, orgs, 'contacts:read');
    // Upper case and spaces are accepted and normalized.
    [all, sharded] = await Promise.all([
      startServer(h.serverEnv),
      startServer({ ...h.serverEnv, ORGANIZATIONS: ` ${orgs[0].toUpperCase()}, ${orgs[1]}` }),
    ]);
  });
  after(async () => {
    await Promise.all([all?.stop(), sharded?.stop()]);
    await h?.cleanup();
    work.cleanup();
  });

  test('organizations of the shard: bodies equal to an unsharded replica', async () => {
    for (const org of orgs.slice(0, 2)) {
      for (const q of words.get(org)!) {
        const query = `organization_id=${org}&q=${encodeURIComponent(q)}&direction=all&limit=100`;
        const [a, b] = await Promise.all([search(all.url, key.key, query), search(sharded.url, key.key, query)]);
        assert.equal(b.status, 200, b.text);
        assert.ok(JSON.parse(b.text).pagination.count > 0, `${query} finds something`);
        assert.equal(b.text, a.text, query);
      }
    }
  });

  test('another organization, granted: 421 misdirected_request with the contract body', async () => {
    const res = await fetch(`${sharded.url}/contacts/message-search?organization_id=${orgs[2]}&q=pedido`, {
      headers: { authorization: `Bearer ${key.key}`, 'x-request-id': 'shard-test-1' },
    });
    assert.equal(res.status, 421);
    assert.equal(res.statusText, 'Misdirected Request');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), {
      error: 'misdirected_request',
      message: 'This server does not hold this organization; the request was routed to the wrong shard.',
      request_id: 'shard-test-1',
    });
    // The unsharded replica answers it.
    assert.equal((await search(all.url, key.key, `organization_id=${orgs[2]}&q=pedido`)).status, 200);
  });

  test('the earlier checks win over 421: 401, 403 scope, 400, 403 organization', async () => {
    const q = `organization_id=${orgs[2]}&q=pedido`;
    assert.equal((await search(sharded.url, 'crm_live_nope0000_' + 'x'.repeat(32), q)).status, 401);
    assert.equal((await search(sharded.url, scopeless.key, q)).status, 403);
    const bad = await search(sharded.url, key.key, `organization_id=${orgs[2]}&q=pedido&limit=0`);
    assert.equal(bad.status, 400, bad.text);
    const forbidden = await search(sharded.url, narrow.key, q);
    assert.equal(forbidden.status, 403);
    assert.equal(JSON.parse(forbidden.text).error, 'forbidden');
  });

  test('a sharded replica loads only its organizations, also on reload', async () => {
    const metrics = await (await fetch(`${sharded.adminUrl}/metrics`)).text();
    assert.ok(metrics.includes(orgs[0]) && metrics.includes(orgs[1]), 'its organizations are loaded');
    assert.ok(!metrics.includes(orgs[2]), "the other shard's organization is not");
    const rel = await reloadCli(h.env, ['--json']);
    assert.equal(rel.code, 0, rel.stderr);
    const after = await (await fetch(`${sharded.adminUrl}/metrics`)).text();
    assert.ok(!after.includes(orgs[2]));
    const ready = await fetch(`${sharded.adminUrl}/readyz`);
    assert.equal(ready.status, 200);
  });
});
