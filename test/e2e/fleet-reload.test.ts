/**
 * `npm run reload` on Redis with a replica suspended (SIGSTOP) past its registry entry's expiry:
 * a failure naming it; and with a replica killed (SIGKILL) on this host: the command names it as
 * stopped at once (its pid is gone), instead of after its registry entry expires (5 heartbeats).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { gen, importCli, loadDataset, openHarness, reloadCli, tempDir, type StoreHarness } from '../helpers/e2e.js';
import { runNode, startServer, type RunningServer } from '../helpers/server.js';

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

test('a replica suspended before the reload, its entry already expired: exit 1 naming it', async () => {
  // the CLI listed live entries only: it exited 0, and on SIGCONT the replica answered from the
  // old snapshot until its next version check (CONTRACT 10)
  b.child.kill('SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, 6500)); // the entry's TTL is 5 heartbeats of 1 s
    const r = await runNode('src/cli/reload.ts', ['--timeout', '3'], h.env, 30_000);
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      r.stderr,
      new RegExp(
        `\\(pid ${b.child.pid} on [^)]*\\) did not reload: its process \\(pid ${b.child.pid}\\) is stopped by a signal \\(SIGSTOP or SIGTSTP\\)`,
      ),
    );
    assert.match(r.stdout, new RegExp(`\\(pid ${a.child.pid} on [^)]*\\): 0 reloaded, 1 unchanged`));
  } finally {
    b.child.kill('SIGCONT');
  }
  const after = await reloadCli(h.env);
  assert.equal(after.code, 0, after.stderr);
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

// An operator audit: with Redis out of memory, servers cannot write their answers, and the
// command waited out its timeout and then blamed each (live, serving) server as hung.
test('a Redis that refuses writes (maxmemory): exit 1 at once with its words, no server blamed', async () => {
  const ctl = new Redis(h.redis!.url);
  try {
    await ctl.config('SET', 'maxmemory-policy', 'noeviction');
    await ctl.config('SET', 'maxmemory', '1');
    const t0 = performance.now();
    const r = await runNode('src/cli/reload.ts', ['--timeout', '20'], h.env, 30_000);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(
      r.stderr,
      "reload: store: redis publishing reload request: OOM command not allowed when used memory > 'maxmemory'.\n",
    );
    assert.ok(performance.now() - t0 < 10_000, 'not after the timeout');
  } finally {
    await ctl.config('SET', 'maxmemory', '0');
    ctl.disconnect();
  }
  const again = await reloadCli(h.env);
  assert.equal(again.code, 0, again.stderr);
});
