/**
 * Live reload under load, both stores: client loops of keep-alive searches run while one
 * organization is switched 20 times between two known snapshots (published, then reloaded through
 * the admin listener, every fifth time through `npm run reload`). Every response must be a 200
 * whose body is exactly the reference's answer for one of the two snapshots, never an error and
 * never a mix; after each reload returns, the next answer is the new snapshot's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateDataset } from '../../scripts/gen-lib.js';
import { OrgDataBuilder } from '../../src/model/org-data-builder.js';
import type { Contact, MessageLine, OrgData } from '../../src/model/records.js';
import { loadStoreConfig } from '../../src/config/config.js';
import { openStores } from '../../src/store/open-store.js';
import type { Stores } from '../../src/store/stores.js';
import { parseRfc3339 } from '../../src/time/rfc3339.js';
import {
  expected,
  generateRequest,
  openHarness,
  reloadCli,
  SEARCH,
  vocabulary,
  type StoreHarness,
} from '../helpers/e2e.js';
import { mulberry32 } from '../../scripts/gen-lib.js';
import { createKey, startServer, type CreatedKey, type RunningServer } from '../helpers/server.js';
import { testSeed } from '../helpers/seed.js';

const ORG = '0d0d0d0d-0000-4000-8000-00000000aaaa';
const RELOADS = 20;
const CLIENTS = 4;

type Records = { contacts: Contact[]; messages: MessageLine[] };

function version(seed: number): Records {
  const d = generateDataset({ messages: 20_000, contacts: 400, organizations: 1, seed });
  return {
    contacts: d.contacts.map((c) => ({ ...c, organization_id: ORG })),
    messages: d.messages.map((m) => ({ ...m, organization_id: ORG })),
  };
}

function orgData(r: Records): OrgData {
  const b = new OrgDataBuilder(ORG);
  for (const c of r.contacts) b.addContact(c);
  for (const m of r.messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return b.build();
}

const versions = [version(101), version(202)];
const snapshots = versions.map(orgData);
// A few requests, each with its two possible bodies (exact JSON text).
const rng = mulberry32(testSeed('RELOAD_SEED', 'test/e2e/reload.test.ts', 5));
const queries: { query: string; bodies: string[] }[] = [];
for (let i = 0; queries.length < 6 && i < 200; i++) {
  const g = generateRequest(rng, ORG, vocabulary(versions[i % 2].messages, ORG));
  const bodies = versions.map((d) => JSON.stringify(expected(d, g.request)));
  // Only requests whose answers tell the two snapshots apart.
  if (bodies[0] !== bodies[1]) queries.push({ query: g.query, bodies });
}

for (const storeName of ['embedded', 'redis'] as const) {
  describe(`live reload under load, ${storeName} store`, () => {
    let h: StoreHarness, store: Stores, server: RunningServer, key: CreatedKey;
    before(async () => {
      h = await openHarness(storeName);
      store = await openStores(loadStoreConfig(h.env));
      await store.snapshots.publishSnapshot(snapshots[0]);
      key = await createKey(h.env, [ORG], 'contacts:read,messages:read');
      server = await startServer(h.serverEnv);
    });
    after(async () => {
      await server?.stop();
      await store?.close();
      await h?.cleanup();
    });

    test(`${RELOADS} reloads during searches: only whole old or whole new answers`, async () => {
      assert.equal(queries.length, 6);
      let stop = false,
        total = 0;
      const seen = [0, 0];
      const failures: string[] = [];
      const client = async (c: number): Promise<void> => {
        for (let i = c; !stop; i++) {
          const q = queries[i % queries.length];
          const res = await fetch(`${server.url}${SEARCH}?${q.query}`, {
            headers: { authorization: `Bearer ${key.key}` },
          });
          const text = await res.text();
          total++;
          const which = q.bodies.indexOf(text);
          if (res.status !== 200 || which < 0) failures.push(`${res.status} for ?${q.query}: ${text.slice(0, 300)}`);
          else seen[which]++;
          if (failures.length > 0) return;
        }
      };
      const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
      try {
        for (let r = 1; r <= RELOADS && failures.length === 0; r++) {
          const next = r % 2;
          // every third version in the older format 1, which the server builds in its worker
          await store.snapshots.publishSnapshot(snapshots[next], { format: r % 3 === 0 ? 1 : 2 });
          if (r % 5 === 0) {
            const cli = await reloadCli(h.env);
            assert.equal(cli.code, 0, cli.stderr);
          } else {
            const res = await fetch(`${server.adminUrl}/admin/reload`, { method: 'POST' });
            const text = await res.text();
            assert.equal(res.status, 200, text);
            const summary = JSON.parse(text) as { reloaded: unknown[]; failed: unknown[] };
            assert.deepEqual(summary.failed, []);
          }
          // Once the reload returned, the next answer is the new snapshot's.
          const q: { query: string; bodies: string[] } = queries[r % queries.length];
          const res = await fetch(`${server.url}${SEARCH}?${q.query}`, {
            headers: { authorization: `Bearer ${key.key}` },
          });
          assert.equal(await res.text(), q.bodies[next], `reload ${r}: the answer right after it`);
        }
      } finally {
        stop = true;
        await Promise.all(clients);
      }
      assert.deepEqual(failures, []);
      assert.ok(seen[0] > 0 && seen[1] > 0, `both snapshots were answered (${seen})`);
      assert.ok(total >= 100, `enough searches ran during the reloads (${total})`);
      assert.match(server.output(), /"builder":"worker"/, 'format-1 indexes were built in the worker thread');
      assert.match(server.output(), /"builder":"snapshot"/, 'format-2 indexes were read as stored');
    });

    test('a re-publish of the content in service is verified and kept, not copied; then a change loads', async () => {
      const ask = async (q: { query: string }) =>
        (await fetch(`${server.url}${SEARCH}?${q.query}`, { headers: { authorization: `Bearer ${key.key}` } })).text();
      const reload = async () => {
        const res = await fetch(`${server.adminUrl}/admin/reload`, { method: 'POST' });
        assert.equal(res.status, 200);
        return (await res.json()) as { reloaded: { version: number }[]; failed: unknown[] };
      };
      // the server's log line of the load of `version` (it may reach the output a little after the reload's answer)
      const loadLine = async (version: number) => {
        const mark = `"version":${version},`;
        for (let i = 0; i < 100; i++) {
          const line = server
            .output()
            .split('\n')
            .find((l) => l.includes('"catalog: snapshot loaded"') && l.includes(mark));
          if (line !== undefined) return line;
          await new Promise((r) => setTimeout(r, 50));
        }
        return '';
      };
      // the same content twice: the first loads (whatever is in service now), the second is the same
      await store.snapshots.publishSnapshot(snapshots[0]);
      await reload();
      const same = await store.snapshots.publishSnapshot(snapshots[0]);
      const r1 = await reload();
      assert.deepEqual(r1.failed, []);
      // (or already by the server's own poll of the store, which runs every second)
      assert.ok(
        [`[${same.version}]`, '[]'].includes(JSON.stringify(r1.reloaded.map((x) => x.version))),
        JSON.stringify(r1),
      );
      assert.match(await loadLine(same.version), /"builder":"unchanged"/);
      for (const q of queries) assert.equal(await ask(q), q.bodies[0]);
      // a change after it loads as always
      const changed = await store.snapshots.publishSnapshot(snapshots[1]);
      const r2 = await reload();
      assert.deepEqual(r2.failed, []);
      assert.ok(
        [`[${changed.version}]`, '[]'].includes(JSON.stringify(r2.reloaded.map((x) => x.version))),
        JSON.stringify(r2),
      );
      const line = await loadLine(changed.version);
      assert.notEqual(line, '', 'the change was loaded');
      assert.doesNotMatch(line, /"builder":"unchanged"/);
      for (const q of queries) assert.equal(await ask(q), q.bodies[1]);
    });
  });
}
