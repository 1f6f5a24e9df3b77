/**
 * End to end, the way an operator runs it, against both stores with the same suite: data from
 * `npm run gen`, imported with the real snapshot CLI, keys from the real keys CLI, the real
 * server process, real HTTP. Whole 200 bodies are compared with the brute-force reference
 * (test/reference) for a few hundred generated requests: terms from the data's own words and
 * adjacent pairs (accents, case, punctuation, decomposed forms), q/keywords/keyword, any/all,
 * direction, channel, from/to as dates and date-times with offsets and fractions, limit, offset
 * (past the end too), messages_limit, percent-encoding with %20 or +, parameters in any order.
 * Then re-import + `npm run reload`, a bad import, revocation and `keys list`.
 *
 * Seed: E2E_SEED (default 20250101); a failure message names the request's query string.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { mulberry32 } from '../../scripts/gen-lib.js';
import type { Contact, MessageLine } from '../../src/model/records.js';
import type { SearchRequest } from '../../src/request/search-request.js';
import {
  assertBody,
  expected,
  gen,
  generateRequest,
  importCli,
  loadDataset,
  openHarness,
  organizationsOf,
  rehome,
  reloadCli,
  search,
  searchRequest,
  tempDir,
  vocabulary,
  waitFor,
  writeDataset,
  type Dataset,
  type StoreHarness,
  type Vocabulary,
} from '../helpers/e2e.js';
import {
  createKey,
  keysCli,
  startServer,
  type CreatedKey,
  type RunningServer,
  LISTED_KEY_FIELDS,
} from '../helpers/server.js';
import { referenceTerms } from '../reference/brute-force.js';
import { testSeed } from '../helpers/seed.js';

const SEED = testSeed('E2E_SEED', 'test/e2e/e2e.test.ts', 20250101);
const REQUESTS = 300;
const EMPTY_ORG = '00000000-0000-4000-8000-00000000e0e0'; // granted, never imported

const work = tempDir('e2e-gen-');
const repl = tempDir('e2e-repl-');
let base: Dataset;
let replacement: Dataset; // new content for the first organization
let orgs: string[];

before(async () => {
  await gen(`${work.dir}/base`, { messages: 3000, contacts: 120, organizations: 3, seed: SEED });
  base = loadDataset(`${work.dir}/base`);
  orgs = organizationsOf(base);
  assert.equal(orgs.length, 3);
  await gen(`${work.dir}/other`, { messages: 800, contacts: 30, organizations: 1, seed: SEED + 1 });
  const other = loadDataset(`${work.dir}/other`);
  const moved = rehome(other, organizationsOf(other)[0], orgs[0]);
  replacement = writeDataset(repl.dir, moved.contacts, moved.messages);
});
after(() => {
  work.cleanup();
  repl.cleanup();
});

function request(org: string, q: string, more: Partial<SearchRequest> = {}): SearchRequest {
  return searchRequest(org, referenceTerms(q, null, []), more);
}

// Each store with one serving thread (the main thread); the cluster run: REDIS_URL names one node of
// a local Redis Cluster (3 masters, 3 replicas); and two serving threads sharing the port.
for (const [storeName, threads] of [
  ['embedded', 1],
  ['redis', 1],
  ['cluster', 1],
  ['embedded', 2],
  ['redis', 2],
] as const) {
  describe(`end to end, ${storeName} store, SERVER_THREADS=${threads}`, () => {
    let h: StoreHarness;
    let server: RunningServer;
    let key: CreatedKey;
    const vocab = new Map<string, Vocabulary>();
    // What the store should hold now (the re-import test changes it).
    let data: { contacts: Contact[]; messages: MessageLine[] };

    before(async () => {
      h = await openHarness(storeName);
      const imp = await importCli(h.env, base, ['--json']);
      assert.equal(imp.code, 0, imp.stderr);
      const summary = JSON.parse(imp.stdout) as { organizations: { organization_id: string }[]; messages: number };
      assert.equal(summary.messages, 3000);
      assert.deepEqual(summary.organizations.map((o) => o.organization_id).sort(), [...orgs].sort());
      key = await createKey(h.env, [...orgs, EMPTY_ORG], 'contacts:read,messages:read', ['--name', 'e2e']);
      server = await startServer({ ...h.serverEnv, SERVER_THREADS: String(threads) });
      for (const o of orgs) vocab.set(o, vocabulary(base.messages, o));
      data = { contacts: base.contacts, messages: base.messages };
    });
    after(async () => {
      const code = await server?.stop();
      await h?.cleanup();
      assert.equal(code, 0, 'the server stops cleanly on SIGTERM');
    });

    test(`${REQUESTS} generated requests: whole bodies equal the reference`, async () => {
      const rng = mulberry32(SEED + (storeName === 'redis' ? 7 : storeName === 'cluster' ? 5 : 3));
      const reqs = Array.from({ length: REQUESTS }, (_, i) => {
        const org = orgs[i % orgs.length];
        return generateRequest(rng, org, vocab.get(org)!);
      });
      let nonEmpty = 0;
      // A few requests in flight at once, over keep-alive connections.
      for (let i = 0; i < reqs.length; i += 6) {
        const batch = reqs.slice(i, i + 6);
        const answers = await Promise.all(batch.map((r) => search(server.url, key.key, r.query)));
        batch.forEach((r, j) => {
          const what = `E2E_SEED=${SEED} ${storeName} request ${i + j}: ?${r.query}`;
          assert.equal(answers[j].status, 200, `${what}: ${answers[j].text}`);
          const want = expected(data, r.request);
          if (want.data.length > 0) nonEmpty++;
          assertBody(answers[j].text, want, what);
        });
      }
      assert.ok(nonEmpty > REQUESTS / 3, `most generated requests should find something (${nonEmpty} of ${REQUESTS})`);
    });

    test('a granted organization without data: 200, data [] and count 0', async () => {
      const r = await search(server.url, key.key, `organization_id=${EMPTY_ORG}&q=pedido&direction=all`);
      assert.equal(r.status, 200, r.text);
      assertBody(r.text, expected(data, request(EMPTY_ORG, 'pedido', { direction: 'all' })), 'empty organization');
      assert.equal(JSON.parse(r.text).pagination.count, 0);
    });

    test('re-import of one organization + npm run reload: the very next request sees it, the others are unchanged', async () => {
      const imp = await importCli(h.env, replacement);
      assert.equal(imp.code, 0, imp.stderr);
      const rel = await reloadCli(h.env);
      assert.equal(rel.code, 0, `reload: ${rel.stdout} ${rel.stderr}`);
      const now: { contacts: Contact[]; messages: MessageLine[] } = {
        contacts: [...replacement.contacts, ...data.contacts.filter((c) => c.organization_id !== orgs[0])],
        messages: [...replacement.messages, ...data.messages.filter((m) => m.organization_id !== orgs[0])],
      };
      const newVocab = vocabulary(replacement.messages, orgs[0]);
      const rng = mulberry32(SEED + 11);
      for (let i = 0; i < 30; i++) {
        const org = i % 3 === 0 ? orgs[0] : orgs[i % 3];
        const g = generateRequest(rng, org, org === orgs[0] ? newVocab : vocab.get(org)!);
        const r = await search(server.url, key.key, g.query);
        assert.equal(r.status, 200, r.text);
        assertBody(r.text, expected(now, g.request), `after re-import, request ${i}: ?${g.query}`);
      }
      // A broad query proves the old contacts of the replaced organization are gone.
      const all = request(orgs[0], 'a', { direction: 'all', limit: 100 });
      all.terms = referenceTerms(null, 'de,the,que,el,o,a,pedido,order,la,you', []);
      const r = await search(
        server.url,
        key.key,
        `organization_id=${orgs[0]}&keywords=${encodeURIComponent('de,the,que,el,o,a,pedido,order,la,you')}&direction=all&limit=100`,
      );
      assertBody(r.text, expected(now, all), 'broad query after re-import');
      const oldIds = new Set(base.contacts.filter((c) => c.organization_id === orgs[0]).map((c) => c.id));
      for (const item of JSON.parse(r.text).data as { contact: { id: string } }[])
        assert.ok(!oldIds.has(item.contact.id));
      data = now; // later tests of this suite see the current data
    });

    test('a bad line at the end of the file: non-zero exit naming file, line and field; the old data stays served after a reload', async () => {
      const target = orgs[1];
      const current = data;
      // New content for orgs[1] (its messages shuffled to other contacts' text) plus one bad line at the end.
      const contacts = current.contacts.filter((c) => c.organization_id === target);
      const msgs = current.messages
        .filter((m) => m.organization_id === target)
        .slice(0, 200)
        .map((m) => ({ ...m, content: 'replaced text zzbad' }));
      const bad = JSON.stringify({ ...msgs[0], id: 'bad-1', sent_at: undefined });
      const dir = tempDir('e2e-bad-');
      try {
        const files = writeDataset(dir.dir, contacts, msgs, [bad]);
        const imp = await importCli(h.env, files);
        assert.notEqual(imp.code, 0);
        assert.match(imp.stderr, new RegExp(`messages\\.ndjson line ${msgs.length + 1}: field "sent_at"`));
        assert.match(imp.stderr, /nothing was published/);
      } finally {
        dir.cleanup();
      }
      const rel = await reloadCli(h.env);
      assert.equal(rel.code, 0, rel.stderr);
      const r1 = await search(server.url, key.key, `organization_id=${target}&q=zzbad&direction=all`);
      assertBody(
        r1.text,
        expected(current, request(target, 'zzbad', { direction: 'all' })),
        'nothing of the bad import',
      );
      assert.equal(JSON.parse(r1.text).pagination.count, 0);
      const g = generateRequest(mulberry32(SEED + 13), target, vocab.get(target)!);
      assertBody(
        (await search(server.url, key.key, g.query)).text,
        expected(current, g.request),
        `old data: ?${g.query}`,
      );
    });

    test('a revoked key gets 401 within 2 s on the running server', async () => {
      const k = await createKey(h.env, [orgs[2]], 'contacts:read,messages:read', ['--name', 'to revoke']);
      const q = `organization_id=${orgs[2]}&q=pedido`;
      await waitFor(
        'the new key to be accepted',
        3000,
        async () => (await search(server.url, k.key, q)).status === 200,
      );
      const rev = await keysCli(['revoke', k.prefix], h.env);
      assert.equal(rev.code, 0, rev.stderr);
      const t0 = Date.now();
      await waitFor('revocation', 2000, async () => (await search(server.url, k.key, q)).status === 401);
      assert.ok(Date.now() - t0 <= 2000);
      assert.equal((await search(server.url, key.key, q)).status, 200, 'other keys keep working');
    });

    test('keys list --json shows no secret and no hash', async () => {
      const r = await keysCli(['list', '--json'], h.env);
      assert.equal(r.code, 0, r.stderr);
      const list = JSON.parse(r.stdout) as Record<string, unknown>[];
      assert.ok(list.length >= 2);
      const secret = key.key.slice(-32);
      const hash = createHash('sha256').update(secret).digest('hex');
      assert.ok(!r.stdout.includes(secret) && !r.stdout.includes(hash) && !r.stdout.includes(key.key));
      for (const rec of list) {
        assert.deepEqual(Object.keys(rec).sort(), LISTED_KEY_FIELDS);
      }
      assert.ok(list.some((rec) => rec.prefix === key.prefix));
      // The server's log never carries the key either.
      assert.ok(!server.output().includes(secret));
    });
  });
}
