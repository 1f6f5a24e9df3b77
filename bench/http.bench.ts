/**
 * HTTP benchmark (issues 5, 11): the real service on loopback, in the same run as a ceiling.
 *   ceiling  uWS (the same native build) answering every request with one fixed body of the
 *            mix's mean response size, built once: what HTTP alone costs on this machine
 *   service  the real server (`node --import tsx src/main.ts`), data imported with the real
 *            snapshot CLI, key created with the real keys CLI, LOG_LEVEL=warn (`--log-level
 *            info`: the default, one line a request, to a file), with bench/gc-observer.ts
 *            preloaded to record every GC pause
 * Three parts:
 *   1. serial latency per query class: one keep-alive raw-socket client (test/helpers/raw-http.ts),
 *      one request at a time, the classes interleaved; a fetch client would add more client work
 *      than the service spends (FIELD-NOTES)
 *   2. throughput: wrk (C, a separate process, far less CPU than an in-process client), the mix
 *      round robin, interleaved rounds on ceiling and service
 *   3. GC pauses of the service during its throughput rounds (full load)
 *
 * Run: npm run bench -- --only http [--messages N] [--contacts M] [--duration S] [--rounds R]
 *      [--connections C] [--serial N] [--threads T (SERVER_THREADS of the service, default 1)]
 *      [--log-level L (LOG_LEVEL of the service, default warn)]
 * Internal: `--serve ceiling --size B` starts the ceiling server (a child of the bench).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateRecords } from '../scripts/gen-lib.js';
import { loadUws } from '../src/http/uws.js';
import { tokensOf } from '../src/text/analyze.js';
import { parseRfc3339 } from '../src/time/rfc3339.js';
import { RawConnection, rawGet, type RawOutcome } from '../test/helpers/raw-http.js';
import {
  createKey,
  dataset,
  flagNumber,
  flagString,
  fmt,
  freePort,
  importCli,
  machine,
  percentile,
  procCpuSeconds,
  procStatus,
  ROOT,
  sortedCopy,
  startServer,
  table,
  tempDir,
  type Server,
} from './helpers.js';

const MESSAGES = flagNumber('messages', 1_000_000);
const CONTACTS = flagNumber('contacts', 20_000);
const SEED = 42;
const DURATION = flagNumber('duration', 10);
const WARMUP = flagNumber('warmup', 2);
const CONNECTIONS = flagNumber('connections', 32);
const ROUNDS = flagNumber('rounds', 3);
const SERIAL = flagNumber('serial', 2000);
const LOG_LEVEL = flagString('log-level', 'warn');
const SEARCH_PATH = '/contacts/message-search';

// ---------------------------------------------------------------- query classes

/**
 * The issue's query classes, chosen from the data by document frequency (counted here with the
 * project's tokenizer, so the choice does not depend on the index layout).
 */
function queryClasses(orgIdHint: string): { orgId: string; classes: Record<string, string> } {
  const df = new Map<string, number>();
  const sentAt: number[] = [];
  let phrase = '';
  let orgId = orgIdHint;
  for (const r of generateRecords({ messages: MESSAGES, contacts: CONTACTS, organizations: 1, seed: SEED })) {
    if (r.kind === 'contact') {
      orgId = r.contact.organization_id;
      continue;
    }
    sentAt.push(parseRfc3339(r.message.sent_at)!);
    const tokens = tokensOf(r.message.content);
    if (phrase === '' && tokens.length >= 2 && tokens[0].length >= 2 && tokens[1].length >= 2)
      phrase = `${tokens[0]} ${tokens[1]}`;
    for (const t of new Set(tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  const byDf = [...df]
    .map(([t, n]) => ({ t, df: n }))
    .filter((x) => x.t.length >= 3 && !/^\d+$/.test(x.t))
    .sort((a, b) => b.df - a.df || (a.t < b.t ? -1 : 1));
  const common = byDf[0].t;
  const rare = byDf.find((x) => x.df <= 20)?.t ?? byDf[byDf.length - 1].t;
  const mid = byDf.slice(20, 40).map((x) => x.t);
  const sorted = Float64Array.from(sentAt).sort().reverse();
  const n = sorted.length;
  const dateFrom = new Date(sorted[Math.floor(n * 0.6)]).toISOString().slice(0, 10);
  const dateTo = new Date(sorted[Math.floor(n * 0.4)]).toISOString().slice(0, 10);
  const enc = encodeURIComponent;
  const q = (s: string) => `organization_id=${orgId}&${s}`;
  return {
    orgId,
    classes: {
      common: q(`q=${enc(common)}`),
      rare: q(`q=${enc(rare)}`),
      all2: q(`keywords=${enc(mid[0])},${enc(mid[1])}&match=all`),
      any3: q(`keywords=${enc(mid[5])},${enc(mid[6])},${enc(mid[7])}`),
      phrase: q(`q=${enc(phrase)}`),
      filtered: q(`q=${enc(mid[8])}&channel=whatsapp&from=${dateFrom}&to=${dateTo}`),
    },
  };
}

// ---------------------------------------------------------------- the ceiling (a child process)

/** uWS answering every request with one fixed body of `size` bytes and the service's headers. */
function serveCeiling(port: number, size: number): void {
  const uws = loadUws();
  const body = Buffer.alloc(size, 0x61);
  body.write('{"data":"');
  body.write('"}', size - 2);
  uws
    .App()
    .any('/*', (res) => {
      res.cork(() => {
        res.writeStatus('200 OK');
        res.writeHeader('Content-Type', 'application/json; charset=utf-8');
        res.writeHeader('Cache-Control', 'no-store');
        res.writeHeader('X-Request-Id', '00000000-0000-4000-8000-000000000000');
        res.end(body);
      });
    })
    .listen('127.0.0.1', port, (s) => {
      if (!s) {
        process.stderr.write(`ceiling: cannot listen on ${port}\n`);
        process.exit(1);
      }
      process.stdout.write('ready\n');
    });
}

interface Child {
  child: ChildProcess;
  port: number;
  stop(): void;
}

async function spawnCeiling(size: number): Promise<Child> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/http.bench.ts', '--serve', 'ceiling', '--port', String(port), '--size', String(size)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`bench: ceiling exited with ${code}`)));
  });
  return { child, port, stop: () => child.kill('SIGTERM') };
}

// ---------------------------------------------------------------- 1. serial latency

/**
 * SERIAL requests a class over one keep-alive connection, one at a time, the classes
 * interleaved (after a warm-up of a tenth as many); ms from the write to the whole response.
 */
async function serial(
  port: number,
  targets: Record<string, string>,
  headers: Array<[string, string]>,
): Promise<Record<string, Float64Array>> {
  const conn = new RawConnection(port);
  const names = Object.keys(targets);
  const requests = names.map((n) => Buffer.from(rawGet(targets[n], headers)));
  const times = names.map(() => new Float64Array(SERIAL));
  const check = (o: RawOutcome, name: string): void => {
    if (o.kind !== 'response' || o.status !== 200)
      throw new Error(`bench: serial ${name}: ${o.kind === 'response' ? o.status : o.kind}`);
  };
  try {
    for (let i = 0; i < Math.ceil(SERIAL / 10); i++)
      for (let k = 0; k < names.length; k++) check(await conn.request(requests[k]), names[k]);
    for (let i = 0; i < SERIAL; i++) {
      for (let k = 0; k < names.length; k++) {
        const t0 = process.hrtime.bigint();
        const o = await conn.request(requests[k]);
        times[k][i] = Number(process.hrtime.bigint() - t0) / 1e6;
        check(o, names[k]);
      }
    }
  } finally {
    conn.destroy();
  }
  return Object.fromEntries(names.map((n, k) => [n, times[k].sort()]));
}

// ---------------------------------------------------------------- 2. throughput (wrk)

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: string;
  serverCpu: number;
  wrkCpu: number;
  /** epoch ms of the run's start and end */
  from: number;
  to: number;
}

/** wrk's "1.23ms" / "456.00us" / "1.02s" in ms. */
function wrkMs(s: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(s.trim());
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
}

async function wrk(port: number, script: string, seconds: number, serverPid: number): Promise<WrkResult> {
  const cpu0 = procCpuSeconds(serverPid);
  const from = Date.now();
  const child = spawn(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  let wrkCpu = 0;
  const sampler = setInterval(() => (wrkCpu = procCpuSeconds(child.pid!) || wrkCpu), 200);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(sampler);
  const to = Date.now();
  if (code !== 0) throw new Error(`bench: wrk exited with ${code}:\n${out}`);
  const wall = (to - from) / 1000;
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    errors: /Socket errors: (.*)/.exec(out)?.[1] ?? '',
    serverCpu: (procCpuSeconds(serverPid) - cpu0) / wall,
    wrkCpu: wrkCpu / wall,
    from,
    to,
  };
}

function wrkScript(file: string, paths: string[], authorization: string): void {
  const list = paths.map((p) => `  "${p.replace(/"/g, '\\"')}",`).join('\n');
  writeFileSync(
    file,
    `local paths = {\n${list}\n}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format("GET", paths[(i % #paths) + 1], { ["Authorization"] = "${authorization}" })\nend\n`,
  );
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---------------------------------------------------------------- 3. GC pauses

interface Pause {
  at: number;
  ms: number;
  kind: number;
}

function pauses(file: string): Pause[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [at, ms, kind] = l.split(' ').map(Number);
      return { at, ms, kind };
    });
}

const KINDS: Record<number, string> = {
  1: 'minor (scavenge)',
  2: 'major (mark-compact)',
  4: 'incremental marking',
  8: 'weak callbacks',
};

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  console.log(`# HTTP benchmark: ${fmt(MESSAGES)} messages, ${fmt(CONTACTS)} contacts, 1 organization`);
  console.log(machine());
  const ds = await dataset(MESSAGES, CONTACTS, SEED);
  const tmp = tempDir('http');
  let ceiling: Child | null = null;
  let service: Server | null = null;
  try {
    const store = { DATA_DIR: path.join(tmp.dir, 'data') };
    const imported = await importCli(ds, store);
    const orgId = imported.organizations[0].organization_id;
    const key = await createKey(store, [orgId]);
    const gcLog = path.join(tmp.dir, 'gc.log');
    service = await startServer(store, {
      logLevel: LOG_LEVEL,
      logFile: path.join(tmp.dir, 'server.log'),
      // BENCH_NODE_ARGS: more node or V8 flags for the service (e.g. to compare GC settings)
      nodeArgs: [
        '--import',
        './bench/gc-observer.ts',
        ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
      ],
      // The issue's goals are for one serving thread (the default is one a core).
      env: { GC_LOG_FILE: gcLog, SERVER_THREADS: String(flagNumber('threads', 1)) },
    });
    const { orgId: generated, classes } = queryClasses(orgId);
    if (generated !== orgId) throw new Error(`bench: generated organization ${generated} is not the imported ${orgId}`);

    const paths = Object.fromEntries(Object.entries(classes).map(([n, q]) => [n, `${SEARCH_PATH}?${q}`]));
    const sizes: Record<string, number> = {};
    const classRows: (string | number)[][] = [];
    for (const [name, p] of Object.entries(paths)) {
      const r = await fetch(`${service.url}${p}`, { headers: { authorization: `Bearer ${key}` } });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`bench: ${name}: status ${r.status}: ${text}`);
      sizes[name] = Buffer.byteLength(text);
      const count = (JSON.parse(text) as { pagination: { count: number } }).pagination.count;
      classRows.push([
        name,
        `\`${decodeURIComponent(classes[name].replace(/^organization_id=[^&]+&/, ''))}\``,
        fmt(count),
        fmt(sizes[name]),
      ]);
    }
    const meanSize = Math.round(Object.values(sizes).reduce((a, b) => a + b, 0) / Object.keys(sizes).length);
    ceiling = await spawnCeiling(meanSize);
    console.log(
      `\nquery classes (mean response ${fmt(meanSize)} bytes; the ceiling answers that many bytes to everything):\n`,
    );
    console.log(table(['class', 'parameters', 'matching contacts', 'response bytes'], classRows));

    // 1. serial latency
    const auth: Array<[string, string]> = [['Authorization', `Bearer ${key}`]];
    const svcSerial = await serial(service.port, paths, auth);
    const ceilSerial = await serial(ceiling.port, { ceiling: paths.common }, auth);
    const all = sortedCopy(Object.values(svcSerial).flatMap((xs) => [...xs]));
    const serialRows = Object.entries(svcSerial).map(([n, xs]) => [
      n,
      percentile(xs, 50).toFixed(3),
      percentile(xs, 99).toFixed(3),
      xs[xs.length - 1].toFixed(3),
    ]);
    serialRows.push([
      '**mix of the 6**',
      percentile(all, 50).toFixed(3),
      percentile(all, 99).toFixed(3),
      all[all.length - 1].toFixed(3),
    ]);
    const cs = ceilSerial.ceiling;
    serialRows.push([
      `ceiling (${fmt(meanSize)} bytes)`,
      percentile(cs, 50).toFixed(3),
      percentile(cs, 99).toFixed(3),
      cs[cs.length - 1].toFixed(3),
    ]);

    // 2. throughput, interleaved rounds
    const script = path.join(tmp.dir, 'mix.lua');
    wrkScript(script, Object.values(paths), `Bearer ${key}`);
    const targets = [
      { name: `uWS fixed ${fmt(meanSize)}-byte body (ceiling)`, port: ceiling.port, pid: ceiling.child.pid! },
      { name: `service (LOG_LEVEL=${LOG_LEVEL})`, port: service.port, pid: service.child.pid! },
    ];
    const runs: WrkResult[][] = targets.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) {
        if (round === 0 && WARMUP > 0) await wrk(t.port, script, WARMUP, t.pid);
        const r = await wrk(t.port, script, DURATION, t.pid);
        if (r.non2xx > 0 || r.errors !== '')
          throw new Error(`bench: ${t.name}: ${r.non2xx} non-2xx, socket errors ${r.errors}`);
        runs[i].push(r);
        console.log(`  round ${round + 1} ${t.name}: ${fmt(r.rps)} req/s`);
      }
    }
    const ratios = runs[1].map((r, i) => r.rps / runs[0][i].rps);
    const rssService = procStatus(service.child.pid!);

    // 3. GC pauses of the service during its full-load rounds (flushed on exit)
    const windows = runs[1].map((r) => [r.from, r.to]);
    await service.stop();
    service = null;
    const loaded = pauses(gcLog).filter((p) => windows.some(([a, b]) => p.at >= a && p.at <= b));
    const loadSeconds = windows.reduce((s, [a, b]) => s + (b - a) / 1000, 0);

    console.log('\n## Results\n');
    console.log(
      `### Serial latency, one keep-alive raw-socket client, ${fmt(SERIAL)} requests a class (classes interleaved)\n`,
    );
    console.log(table(['class', 'p50 ms', 'p99 ms', 'max ms'], serialRows));
    console.log(
      `\n### Throughput: wrk, 1 thread, ${CONNECTIONS} connections, the 6 classes round robin, ${ROUNDS} interleaved rounds of ${DURATION} s\n`,
    );
    console.log(
      table(
        ['target', 'requests/s (median)', 'each round', 'p50 ms', 'p99 ms', 'server CPU', 'wrk CPU'],
        targets.map((t, i) => {
          const rs = runs[i];
          return [
            t.name,
            fmt(median(rs.map((r) => r.rps))),
            rs.map((r) => fmt(r.rps)).join(' / '),
            median(rs.map((r) => r.p50)).toFixed(2),
            median(rs.map((r) => r.p99)).toFixed(2),
            `${Math.round(median(rs.map((r) => r.serverCpu)) * 100)}%`,
            `${Math.round(median(rs.map((r) => r.wrkCpu)) * 100)}%`,
          ];
        }),
      ),
    );
    console.log(
      `\nservice / ceiling, same round: ${ratios.map((r) => r.toFixed(3)).join(' / ')} (median ${median(ratios).toFixed(3)})`,
    );
    // On a 2-core host the ceiling's rate is wrk's (wrk near 100% of a core, the ceiling's server
    // well below), so the ratio above also moves with the client. Requests a server CPU-second
    // compares the two servers' own cost a request, whatever bounds the rate.
    const perCpu = (r: WrkResult) => r.rps / Math.max(r.serverCpu, 1e-9);
    const cpuRatios = runs[1].map((r, i) => perCpu(r) / perCpu(runs[0][i]));
    console.log(
      `requests a server CPU-second, service / ceiling, same round: ${cpuRatios.map((r) => r.toFixed(3)).join(' / ')} ` +
        `(median ${median(cpuRatios).toFixed(3)}; service ${fmt(Math.round(median(runs[1].map(perCpu))))}, ` +
        `ceiling ${fmt(Math.round(median(runs[0].map(perCpu))))})`,
    );
    console.log(
      `\n### GC pauses of the service during its ${loadSeconds.toFixed(0)} s at full load (perf_hooks observer)\n`,
    );
    const gcRows = Object.entries(KINDS).map(([k, name]) => {
      const xs = sortedCopy(loaded.filter((p) => p.kind === Number(k)).map((p) => p.ms));
      return [
        name,
        fmt(xs.length),
        xs.length ? xs.reduce((a, b) => a + b, 0).toFixed(1) : '0',
        xs.length ? percentile(xs, 50).toFixed(2) : '-',
        xs.length ? percentile(xs, 99).toFixed(2) : '-',
        xs.length ? xs[xs.length - 1].toFixed(2) : '-',
      ];
    });
    console.log(table(['kind', 'pauses', 'total ms', 'p50 ms', 'p99 ms', 'max ms'], gcRows));
    const over = loaded.filter((p) => p.ms > 5);
    console.log(
      `\npauses over 5 ms: ${over.length}${over.length ? ` (${over.map((p) => `${p.ms.toFixed(1)} ms ${KINDS[p.kind] ?? p.kind}`).join(', ')})` : ''}; ` +
        `GC time ${((loaded.reduce((s, p) => s + p.ms, 0) / 1000 / loadSeconds) * 100).toFixed(1)}% of the wall time`,
    );
    console.log(
      `RSS of the service after the load: ${(rssService.vmRss / 2 ** 20).toFixed(0)} MiB (peak ${(rssService.vmHwm / 2 ** 20).toFixed(0)} MiB)`,
    );
    console.log(`\nend: ${machine()}`);
  } finally {
    ceiling?.stop();
    if (service) await service.stop();
    tmp.cleanup();
  }
}

const serve = flagString('serve', '');
if (serve === 'ceiling') serveCeiling(flagNumber('port', 0), flagNumber('size', 40_000));
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
