/**
 * Redis Cluster failover: the master holding an organization's slot is killed (SIGKILL). The
 * replica keeps answering from memory, an import meanwhile either waits for the failover or
 * fails clearly, and is never half-published; once a replica has been promoted, a reload
 * succeeds and the service answers from the newest complete snapshot.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Contact, MessageLine } from '../../src/model/records.js';
import type { SearchRequest } from '../../src/request/search-request.js';
import {
  assertBody,
  expected,
  gen,
  importCli,
  loadDataset,
  openHarness,
  organizationsOf,
  rehome,
  reloadCli,
  search,
  tempDir,
  waitFor,
  writeDataset,
  type Dataset,
  type StoreHarness,
} from '../helpers/e2e.js';
import { createKey, startServer, type CreatedKey, type RunningServer } from '../helpers/server.js';
import { referenceTerms } from '../reference/brute-force.js';

describe("Redis Cluster: the master of an organization's slot fails", () => {
  const work = tempDir('failover-gen-');
  const repl = tempDir('failover-repl-');
  let h: StoreHarness;
  let base: Dataset, replacement: Dataset;
  let orgs: string[];
  let key: CreatedKey;
  let server: RunningServer;
  let word: string;

  const req = (org: string): SearchRequest => ({
    organizationId: org,
    terms: referenceTerms(word, null, []),
    match: 'any',
    direction: 'all',
    channel: null,
    from: null,
    to: null,
    limit: 100,
    offset: 0,
    messagesLimit: 3,
  });
  const query = (org: string) => `organization_id=${org}&q=${encodeURIComponent(word)}&direction=all&limit=100`;

  before(async () => {
    await gen(`${work.dir}/base`, { messages: 1200, contacts: 60, organizations: 2, seed: 1416 });
    await gen(`${work.dir}/other`, { messages: 500, contacts: 30, organizations: 1, seed: 1417 });
    base = loadDataset(`${work.dir}/base`);
    orgs = organizationsOf(base);
    const other = loadDataset(`${work.dir}/other`);
    const moved = rehome(other, organizationsOf(other)[0], orgs[0]);
    replacement = writeDataset(repl.dir, moved.contacts, moved.messages);
    // A word both the old and the new content of the first organization contain.
    const words = (ms: MessageLine[]) =>
      new Set(
        ms
          .filter((m) => m.organization_id === orgs[0])
          .flatMap((m) => m.content.split(/\s+/))
          .filter((w) => /^\p{L}{4,}$/u.test(w)),
      );
    const newWords = words(replacement.messages);
    word = [...words(base.messages)].find((w) => newWords.has(w)) ?? 'pedido';
    h = await openHarness('cluster');
    assert.equal((await importCli(h.env, base)).code, 0);
    key = await createKey(h.env, orgs, 'contacts:read,messages:read');
    server = await startServer(h.serverEnv);
  });
  after(async () => {
    await server?.stop();
    await h?.cleanup();
    work.cleanup();
    repl.cleanup();
  });

  test('serves from memory during the failover; the import is never half-published; a reload succeeds after', async () => {
    const old = { contacts: base.contacts, messages: base.messages };
    for (const org of orgs)
      assertBody((await search(server.url, key.key, query(org))).text, expected(old, req(org)), `before, ${org}`);

    const master = await h.cluster!.masterOf(`snap:{${orgs[0]}}:ptr`);
    await h.cluster!.kill(master);

    // The replica answers from memory while the cluster has no master for that slot.
    for (let i = 0; i < 5; i++) {
      for (const org of orgs) {
        const r = await search(server.url, key.key, query(org));
        assert.equal(r.status, 200, r.text);
        assertBody(r.text, expected(old, req(org)), `during the failover, ${org}`);
      }
    }
    const imp = await importCli(h.env, replacement);
    if (imp.code !== 0)
      assert.match(
        imp.stderr,
        /store: redis unavailable at|store: redis publishing organization/,
        `a clear error: ${imp.stderr}`,
      );

    await h.cluster!.waitHealthy();
    // A reload succeeds once the replica is promoted (the CLI retries while the cluster settles).
    let rel = await reloadCli(h.env);
    for (let tries = 0; rel.code !== 0 && tries < 5; tries++) {
      await new Promise((r) => setTimeout(r, 1000));
      rel = await reloadCli(h.env);
    }
    assert.equal(rel.code, 0, `reload after the failover: ${rel.stdout} ${rel.stderr}`);

    // The import either happened whole (the new content) or not at all (the old).
    const now: { contacts: Contact[]; messages: MessageLine[] } =
      imp.code === 0
        ? {
            contacts: [...replacement.contacts, ...base.contacts.filter((c) => c.organization_id !== orgs[0])],
            messages: [...replacement.messages, ...base.messages.filter((m) => m.organization_id !== orgs[0])],
          }
        : old;
    for (const org of orgs)
      assertBody(
        (await search(server.url, key.key, query(org))).text,
        expected(now, req(org)),
        `after, ${org} (import exit ${imp.code})`,
      );

    // And an import after the failover publishes and reaches the server.
    const again = await importCli(h.env, replacement);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await reloadCli(h.env)).code, 0);
    const fresh = {
      contacts: [...replacement.contacts, ...base.contacts.filter((c) => c.organization_id !== orgs[0])],
      messages: [...replacement.messages, ...base.messages.filter((m) => m.organization_id !== orgs[0])],
    };
    await waitFor(
      'the new snapshot',
      5_000,
      async () =>
        (await search(server.url, key.key, query(orgs[0]))).text === JSON.stringify(expected(fresh, req(orgs[0]))),
    );
  });
});
