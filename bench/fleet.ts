/**
 * Fleet figures on a local Redis Cluster (3 masters + 3 replicas), issue 14:
 *   node --import tsx bench/fleet.ts [--messages 1000000] [--replicas 3] [--seed 42]
 *
 * 1. `npm run gen` data over 3 organizations, imported with the real CLI; N service replicas.
 * 2. One organization re-imported (new content, a third of the messages), then `npm run reload`:
 *    the time from its start until every replica serves the new version (polled on /metrics
 *    every 10 ms), against each replica's own load time (its "snapshot loaded" log line), and
 *    the p50/p99 of searches sent meanwhile (one serial keep-alive client per replica; fetch
 *    adds ~0.3 ms p50 / ~3 ms p99 of its own, FIELD-NOTES).
 * 3. One replica killed with SIGKILL, then `npm run reload`: the time until the command names
 *    it as stopped.
 */
import { spawn } from 'node:child_process';
import { freemem } from 'node:os';
import { percentile, machine, sortedCopy, flagNumber } from './helpers.js';
import { startCluster } from '../test/helpers/redis-cluster.js';
import { importCli, loadDataset, organizationsOf, rehome, tempDir, writeDataset } from '../test/helpers/e2e.js';
import { baseEnv, createKey, ROOT, runNode, startServer, type RunningServer } from '../test/helpers/server.js';

/** `npm run gen` with a long timeout (1M messages on a busy machine). */
async function gen(
  out: string,
  o: { messages: number; contacts: number; organizations: number; seed: number },
): Promise<void> {
  const r = await runNode(
    'scripts/gen.ts',
    [
      '--messages',
      String(o.messages),
      '--contacts',
      String(o.contacts),
      '--organizations',
      String(o.organizations),
      '--seed',
      String(o.seed),
      '--out',
      out,
    ],
    baseEnv({}),
    900_000,
  );
  if (r.code !== 0) throw new Error(`gen failed: ${r.stderr}`);
}

const MESSAGES = flagNumber('messages', 1_000_000);
const REPLICAS = flagNumber('replicas', 3);
const SEED = flagNumber('seed', 42);
const t = () => performance.now();
const log = (s: string) => process.stdout.write(s + '\n');

/** Runs the reload CLI, returning its wall time and output; `onLine` sees stdout lines as they come. */
function reload(
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; code: number | null; out: string; firstLineMs: Map<string, number> }> {
  return new Promise((resolve) => {
    const t0 = t();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/reload.ts', '--timeout', '60'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const firstLineMs = new Map<string, number>();
    const onData = (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n'))
        if (line.includes('stopped before answering') && !firstLineMs.has('stopped'))
          firstLineMs.set('stopped', t() - t0);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => resolve({ ms: t() - t0, code, out, firstLineMs }));
  });
}

async function versionOf(s: RunningServer, org: string): Promise<number> {
  const text = await (await fetch(`${s.adminUrl}/metrics`)).text();
  const m = text.match(new RegExp(`index_snapshot_version\\{organization_id="${org}"\\} (\\d+)`));
  return m ? Number(m[1]) : -1;
}

async function main(): Promise<void> {
  log(
    `# fleet bench: ${MESSAGES.toLocaleString('en')} messages, 3 organizations, ${REPLICAS} replicas, local Redis Cluster 3+3`,
  );
  log(`machine: ${machine()}; free memory ${(freemem() / 2 ** 30).toFixed(1)} GiB; date ${new Date().toISOString()}`);
  const work = tempDir('fleet-');
  const cluster = await startCluster();
  const servers: RunningServer[] = [];
  try {
    const env = baseEnv({ REDIS_URL: cluster.url, DATA_DIR: work.dir });
    let t0 = t();
    await gen(`${work.dir}/base`, {
      messages: MESSAGES,
      contacts: Math.max(3, Math.round(MESSAGES / 25)),
      organizations: 3,
      seed: SEED,
    });
    await gen(`${work.dir}/other`, {
      messages: Math.round(MESSAGES / 3),
      contacts: Math.max(1, Math.round(MESSAGES / 75)),
      organizations: 1,
      seed: SEED + 1,
    });
    log(`gen: ${((t() - t0) / 1000).toFixed(1)} s`);
    const base = loadDataset(`${work.dir}/base`);
    const orgs = organizationsOf(base);
    const other = loadDataset(`${work.dir}/other`);
    const moved = rehome(other, organizationsOf(other)[0], orgs[0]);
    const replacement = writeDataset(`${work.dir}/other`, moved.contacts, moved.messages);
    t0 = t();
    const imp = await importCli(env, base);
    if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`);
    log(`import of ${MESSAGES.toLocaleString('en')} messages into the cluster: ${((t() - t0) / 1000).toFixed(1)} s`);
    const key = await createKey(env, orgs, 'contacts:read,messages:read');
    t0 = t();
    for (let i = 0; i < REPLICAS; i++)
      servers.push(await startServer({ REDIS_URL: cluster.url, DATA_DIR: work.dir, LOG_LEVEL: 'info' }));
    log(`${REPLICAS} replicas ready: ${((t() - t0) / 1000).toFixed(1)} s (started one after another)`);

    // Searches while the reload runs: a word of the replaced organization's new content.
    const word = moved.messages[0].content.split(/\s+/).find((w) => /^\p{L}{4,}$/u.test(w)) ?? 'pedido';
    const samples: number[] = [];
    let errors = 0;
    let searching = true;
    const loops = servers.map(async (s, i) => {
      const org = orgs[i % 3];
      while (searching) {
        const a = t();
        const r = await fetch(
          `${s.url}/contacts/message-search?organization_id=${org}&q=${encodeURIComponent(word)}&direction=all`,
          { headers: { authorization: `Bearer ${key.key}` } },
        );
        await r.arrayBuffer();
        samples.push(t() - a);
        if (r.status !== 200) errors++;
      }
    });

    // Replicas also poll the store every second, so they may start loading as soon as the
    // import switches the pointer: both clocks are reported (from the import's end, from the command).
    const before = await Promise.all(servers.map((s) => versionOf(s, orgs[0])));
    const logsBefore = servers.map((s) => s.output().length);
    const served: number[] = servers.map(() => -1);
    let watching = true;
    const watch = (async () => {
      while (watching && served.some((x) => x < 0)) {
        await Promise.all(
          servers.map(async (s, i) => {
            if (served[i] < 0 && (await versionOf(s, orgs[0])) !== before[i]) served[i] = t();
          }),
        );
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    t0 = t();
    const imp2 = await importCli(env, replacement);
    if (imp2.code !== 0) throw new Error(`re-import failed: ${imp2.stderr}`);
    const importEnd = t();
    log(
      `re-import of organization ${orgs[0]} (${moved.messages.length.toLocaleString('en')} messages): ${((importEnd - t0) / 1000).toFixed(1)} s`,
    );
    samples.length = 0;
    const start = t();
    const rel = await reload(env);
    setTimeout(() => {
      watching = false;
    }, 30_000).unref();
    await watch;
    const loads = servers.map((s, i) => {
      const m = s
        .output()
        .slice(logsBefore[i])
        .match(new RegExp(`"organization_id":"${orgs[0]}"[^\\n]*"seconds":([0-9.]+)[^\\n]*snapshot loaded`));
      return m ? Number(m[1]) * 1000 : NaN;
    });
    const sorted = sortedCopy(samples);
    log('');
    log('## reload of one organization');
    log(`npm run reload: exit ${rel.code}, ${rel.ms.toFixed(0)} ms wall (including ~${'node+tsx start'} of the CLI)`);
    const last = Math.max(...served);
    log(
      `every replica serves the new version: ${(last - start).toFixed(0)} ms after the command started, ${(last - importEnd).toFixed(0)} ms after the import exited (per replica from the command: ${served.map((x) => (x - start).toFixed(0)).join(', ')} ms)`,
    );
    log(
      `replica load times (log): ${loads.map((x) => x.toFixed(0)).join(', ')} ms; slowest ${Math.max(...loads).toFixed(0)} ms; all served ${(last - importEnd - Math.max(...loads)).toFixed(0)} ms beyond the slowest load, counted from the import's end`,
    );
    log(
      `searches during the reload: n=${sorted.length}, p50 ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, max ${sorted[sorted.length - 1]?.toFixed(2)} ms, non-200 ${errors}`,
    );

    searching = false;
    await Promise.all(loops);

    // A killed replica: how long until the command names it.
    const victim = servers.pop()!;
    victim.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 50));
    const rel2 = await reload(env);
    log('');
    log('## reload with a replica killed (SIGKILL) just before');
    log(
      `npm run reload: exit ${rel2.code}, named the killed replica after ${(rel2.firstLineMs.get('stopped') ?? NaN).toFixed(0)} ms, exited after ${rel2.ms.toFixed(0)} ms`,
    );
    log(
      rel2.out
        .trim()
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n'),
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await cluster.stop();
    work.cleanup();
  }
}

await main();
