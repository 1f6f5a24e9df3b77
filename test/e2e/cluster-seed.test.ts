/**
 * Redis Cluster: a server whose REDIS_URL names one node keeps loading new snapshots after that
 * node dies (here a replica: the cluster itself stays healthy). Each reload pass starts a build
 * worker with a connection of its own; it used to connect from REDIS_URL alone, so every later
 * reload failed ("connect ECONNREFUSED") until that node came back (found by the fleet audit).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import {
  gen,
  importCli,
  loadDataset,
  openHarness,
  organizationsOf,
  reloadCli,
  tempDir,
  waitFor,
  type Dataset,
  type StoreHarness,
} from '../helpers/e2e.js';
import { baseEnv, createKey, startServer, type CreatedKey, type RunningServer } from '../helpers/server.js';

const run = promisify(execFile);

describe('Redis Cluster: the one node REDIS_URL names goes down', () => {
  const work = tempDir('cluster-seed-');
  let h: StoreHarness;
  let first: Dataset, second: Dataset;
  let org: string;
  let key: CreatedKey;
  let server: RunningServer;
  let seed: number, other: number;

  before(async () => {
    await gen(`${work.dir}/one`, { messages: 300, contacts: 20, organizations: 1, seed: 1501 });
    first = loadDataset(`${work.dir}/one`);
    org = organizationsOf(first)[0];
    // the same organization, other messages: the count tells the snapshots apart
    await gen(`${work.dir}/two`, { messages: 200, contacts: 20, organizations: 1, seed: 1501 });
    second = loadDataset(`${work.dir}/two`);
    assert.equal(organizationsOf(second)[0], org);
    h = await openHarness('cluster');
    const roles = await Promise.all(
      h.cluster!.ports.map(async (p) => (await run('redis-cli', ['-p', String(p), 'role'])).stdout.split('\n')[0]),
    );
    seed = h.cluster!.ports[roles.indexOf('slave')];
    other = h.cluster!.ports.find((p) => p !== seed)!;
    const cliEnv = baseEnv({ ...h.env, REDIS_URL: `redis://127.0.0.1:${other}` });
    assert.equal((await importCli(cliEnv, first)).code, 0);
    key = await createKey(cliEnv, [org], 'contacts:read,messages:read');
    server = await startServer({ ...h.serverEnv, REDIS_URL: `redis://127.0.0.1:${seed}` });
  });
  after(async () => {
    await server?.stop();
    await h?.cleanup();
    work.cleanup();
  });

  const status = async (): Promise<number> => {
    const res = await fetch(`${server.url}/contacts/message-search?organization_id=${org}&q=zzzz&limit=1`, {
      headers: { Authorization: `Bearer ${key.key}` },
    });
    return res.status;
  };

  test('a re-import is reloaded through the other nodes', async () => {
    assert.equal(await status(), 200);
    await h.cluster!.kill(seed);
    const cliEnv = baseEnv({ ...h.env, REDIS_URL: `redis://127.0.0.1:${other}` });
    const imp = await importCli(cliEnv, second);
    assert.equal(imp.code, 0, imp.stderr);
    const r = await reloadCli(cliEnv);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    // the server's own version check (every second, through the same build worker) may have
    // loaded it first: then the CLI finds it unchanged
    assert.match(r.stdout, /: (1 reloaded|0 reloaded, 1 unchanged)/);
    const ready = await fetch(`${server.adminUrl}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    await waitFor('the second snapshot served', 5_000, async () => {
      const m = await fetch(`${server.adminUrl}/metrics`);
      return new RegExp(`index_messages\\{organization_id="${org}"\\} 200\\n`).test(await m.text());
    });
    // and no load failed on the way (they failed with ECONNREFUSED before the fix)
    const metrics = await (await fetch(`${server.adminUrl}/metrics`)).text();
    assert.match(metrics, /^catalog_snapshot_loads_total\{result="failed"\} 0$/m);
  });

  // The fleet audit: a server whose one node was down at its start took it for a plain Redis
  // (it could not ask `INFO cluster`), and once the node was back every read of a key of
  // another node's slots got MOVED: 503 for good.
  test('a server started while that node is down becomes ready once it is back', async () => {
    const late = await startServer({ ...h.serverEnv, REDIS_URL: `redis://127.0.0.1:${seed}` }, { waitReady: false });
    try {
      let before = 0;
      await waitFor('the late server listening', 20_000, async () => {
        before = (await fetch(`${late.adminUrl}/readyz`).catch(() => null))?.status ?? 0;
        return before !== 0;
      });
      assert.equal(before, 503, late.output());
      await h.cluster!.restart(seed);
      await waitFor(
        'the late server ready',
        20_000,
        async () => (await fetch(`${late.adminUrl}/readyz`)).status === 200,
      );
      const res = await fetch(`${late.url}/contacts/message-search?organization_id=${org}&q=zzzz&limit=1`, {
        headers: { Authorization: `Bearer ${key.key}` },
      });
      assert.equal(res.status, 200, await res.text());
      await waitFor('the second snapshot served', 5_000, async () => {
        const m = await fetch(`${late.adminUrl}/metrics`);
        return new RegExp(`index_messages\\{organization_id="${org}"\\} 200\\n`).test(await m.text());
      });
      // Its reload subscriber too is the cluster's: one made on the plain client stayed on that
      // node, and reloads stopped reaching the server whenever the node went down (a regression audit).
      const cliEnv = baseEnv({ ...h.env, REDIS_URL: `redis://127.0.0.1:${other}` });
      const up = await reloadCli(cliEnv);
      assert.equal(up.code, 0, `${up.stdout}${up.stderr}`);
      await h.cluster!.kill(seed);
      const down = await reloadCli(cliEnv);
      assert.equal(down.code, 0, `${down.stdout}${down.stderr}`);
      assert.match(down.stdout, new RegExp(`pid ${late.child.pid} on [^)]*\\): 0 reloaded, 1 unchanged`));
    } finally {
      await late.stop();
    }
  });
});
