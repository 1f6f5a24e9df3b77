/**
 * `npm run reload` with a replica killed (SIGKILL) on this host: the command names it as stopped
 * at once (its pid is gone), instead of after its registry entry expires (5 heartbeats).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { gen, importCli, loadDataset, openHarness, reloadCli, tempDir, type StoreHarness } from '../helpers/e2e.js';
import { startServer, type RunningServer } from '../helpers/server.js';

const work = tempDir('fleet-reload-');
let h: StoreHarness;
let a: RunningServer, b: RunningServer;

before(async () => {
  await gen(work.dir, { messages: 200, contacts: 20, organizations: 1, seed: 1418 });
  h = await openHarness('redis');
  assert.equal((await importCli(h.env, loadDataset(work.dir))).code, 0);
  [a, b] = await Promise.all([startServer(h.serverEnv), startServer(h.serverEnv)]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await h?.cleanup();
  work.cleanup();
});

test('a killed replica is named as stopped well before its registry entry expires', async () => {
  const pid = b.child.pid!;
  b.child.kill('SIGKILL');
  await new Promise((r) => b.child.once('exit', r));
  const t0 = performance.now();
  const r = await reloadCli(h.env);
  const ms = performance.now() - t0;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`\\(pid ${pid} on [^)]*\\) stopped before answering`));
  assert.match(r.stdout, /0 reloaded, 1 unchanged/);
  // The entry would live 5 s; node + tsx start-up of the CLI is most of what remains.
  assert.ok(ms < 4_000, `named after ${ms.toFixed(0)} ms`);
});
