/**
 * `npx tsx bench/startup.ts --data-dir DIR [--runs 10]`: start-up time and memory of the server run
 * two ways, alternated so both share the same machine noise: `node --import tsx src/main.ts`
 * (TypeScript compiled at start) and `node [--enable-source-maps] dist/main.js` (the `npm run build`
 * output, as `npm start` runs it). Each run is
 * timed from spawn to the first /readyz 200 (every snapshot in DIR loaded); RSS and peak RSS are
 * read from /proc when ready. Needs `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { 'data-dir': { type: 'string' }, runs: { type: 'string', default: '10' } } });
if (!values['data-dir']) throw new Error('startup: --data-dir is required');
const RUNS = Number(values.runs);
const WAYS = {
  tsx: ['--import', 'tsx', 'src/main.ts'],
  dist: ['dist/main.js'],
  distMaps: ['--enable-source-maps', 'dist/main.js'],
} as const;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** VmRSS and VmHWM of a process, in MiB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)![1]);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** One start; null when /readyz did not answer 200 within 60 s (counted, not averaged). */
async function once(args: readonly string[]): Promise<{ ms: number; rss: number; hwm: number } | null> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: values['data-dir'],
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: 'silent',
  };
  delete env.REDIS_URL;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: 'ignore' });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`startup: ${args.join(' ')} exited with ${child.exitCode}`);
      if (performance.now() - t0 > 60_000) return null;
      const ok = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    return { ms: performance.now() - t0, ...memory(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results: Record<string, { ms: number[]; rss: number[]; hwm: number[]; stuck: number }> = {};
for (let i = 0; i < RUNS; i++) {
  for (const [name, args] of Object.entries(WAYS)) {
    const r = await once(args);
    const acc = (results[name] ??= { ms: [], rss: [], hwm: [], stuck: 0 });
    if (r === null) {
      acc.stuck++;
      continue;
    }
    acc.ms.push(r.ms);
    acc.rss.push(r.rss);
    acc.hwm.push(r.hwm);
  }
}
console.log(
  `| way | ready runs (not ready in 60 s) | spawn to /readyz 200, median ms (min-max) | RSS when ready, median MiB | peak RSS, median MiB |`,
);
console.log('|---|---|---|---|---|');
for (const [name, r] of Object.entries(results)) {
  const lo = Math.min(...r.ms).toFixed(0),
    hi = Math.max(...r.ms).toFixed(0);
  console.log(
    `| \`${WAYS[name as keyof typeof WAYS].join(' ')}\` | ${r.ms.length} (${r.stuck}) | ${median(r.ms).toFixed(0)} (${lo}-${hi}) | ${median(r.rss).toFixed(1)} | ${median(r.hwm).toFixed(1)} |`,
  );
}
