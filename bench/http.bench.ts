/**
 * HTTP benchmark (issue 5): the real service under load on loopback, in the same run as two
 * references, all loaded by autocannon with the same connections, duration and request mix:
 *   ceiling   uWS answering each request with a fixed body of the size the service answers it
 *   node:http the same search in-process (OrgDataBuilder + buildIndex, parseSearchParams,
 *             executeSearch, JSON.stringify) behind node:http, no auth, no logging
 *   service   the real server (`node --import tsx src/main.ts`), data imported with the real
 *             snapshot CLI, key created with the real keys CLI, LOG_LEVEL=warn (and once at info)
 * then the service at half of its maximum rate (paced, open loop) for p99 at half load.
 *
 * Run: npm run bench -- --only http [--messages N] [--contacts M] [--duration S] [--rounds R] [--connections C]
 * Internal: `--serve ceiling|node` starts one of the reference servers (a child of the bench).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { generateRecords } from '../scripts/gen-lib.js';
import { buildIndex } from '../src/index/build.js';
import { loadUws } from '../src/http/uws.js';
import { OrgDataBuilder } from '../src/model/org-data-builder.js';
import { executeSearch } from '../src/query/execute.js';
import { parseSearchParams } from '../src/query/parse-params.js';
import { tokenize } from '../src/text/normalize.js';
import { parseRfc3339 } from '../src/time/rfc3339.js';
import {
  createKey, dataset, flagNumber, flagString, fmt, freePort, importCli, machine, paced, percentile, procCpuSeconds,
  procStatus, ROOT, selfCpuSeconds, sortedCopy, startServer, table, tempDir, windowStats, type Server,
} from './helpers.js';

const MESSAGES = flagNumber('messages', 1_000_000);
const CONTACTS = flagNumber('contacts', 20_000);
const SEED = 42;
const DURATION = flagNumber('duration', 10);
const WARMUP = flagNumber('warmup', 2);
const CONNECTIONS = flagNumber('connections', 32);
const ROUNDS = flagNumber('rounds', 3);
const SEARCH_PATH = '/contacts/message-search';

// ---------------------------------------------------------------- reference servers (children)

/**
 * Query classes chosen from the data by document frequency (as bench/search.bench.ts does, but
 * counted here with the project's tokenizer so the choice does not depend on the index layout).
 */
function queryClasses(df: Map<string, number>, phrase: string, sentAt: Float64Array, orgId: string): Record<string, string> {
  const byDf = [...df]
    .map(([t, n]) => ({ t, df: n }))
    .filter((x) => x.t.length >= 3 && !/^\d+$/.test(x.t))
    .sort((a, b) => b.df - a.df || (a.t < b.t ? -1 : 1));
  const common = byDf[0].t;
  const rare = byDf.find((x) => x.df <= 20)?.t ?? byDf[byDf.length - 1].t;
  const mid = byDf.slice(20, 40).map((x) => x.t);
  const sorted = Float64Array.from(sentAt).sort().reverse(); // newest first, as ordinals are
  const n = sorted.length;
  const dateFrom = new Date(sorted[Math.floor(n * 0.6)]).toISOString().slice(0, 10);
  const dateTo = new Date(sorted[Math.floor(n * 0.4)]).toISOString().slice(0, 10);
  const enc = encodeURIComponent;
  const q = (s: string) => `organization_id=${orgId}&${s}`;
  return {
    'common term': q(`q=${enc(common)}`),
    'rare term': q(`q=${enc(rare)}`),
    '2 terms all': q(`keywords=${enc(mid[0])},${enc(mid[1])}&match=all`),
    phrase: q(`q=${enc(phrase)}`),
    'channel + date filter': q(`q=${enc(mid[8])}&channel=whatsapp&from=${dateFrom}&to=${dateTo}`),
    // not in the mix: an empty page, so parse, auth and HTTP are nearly all the work
    'no match': q('q=zzqqxxjj'),
  };
}

function serveNode(port: number): void {
  let builder: OrgDataBuilder | null = null;
  const df = new Map<string, number>();
  const sentAt = new Float64Array(MESSAGES);
  let phrase = '';
  let m = 0;
  for (const r of generateRecords({ messages: MESSAGES, contacts: CONTACTS, organizations: 1, seed: SEED })) {
    if (r.kind === 'contact') {
      builder ??= new OrgDataBuilder(r.contact.organization_id);
      builder.addContact(r.contact);
      continue;
    }
    const ms = parseRfc3339(r.message.sent_at)!;
    builder!.addMessage(r.message, ms);
    sentAt[m++] = ms;
    const tokens = tokenize(r.message.content);
    if (phrase === '' && tokens.length >= 2 && tokens[0].length >= 2 && tokens[1].length >= 2) phrase = `${tokens[0]} ${tokens[1]}`;
    for (const t of new Set(tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  const data = builder!.build();
  const index = buildIndex(data);
  const orgId = data.organizationId;
  const classes = JSON.stringify({ organizationId: orgId, classes: queryClasses(df, phrase, sentAt.subarray(0, m), orgId) });
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const p = qi < 0 ? url : url.slice(0, qi);
    if (p === '/__classes') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(classes);
      return;
    }
    if (p !== SEARCH_PATH) {
      res.writeHead(404).end();
      return;
    }
    const parsed = parseSearchParams(qi < 0 ? '' : url.slice(qi + 1));
    if (!parsed.ok) {
      res.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8' }).end(JSON.stringify(parsed.details));
      return;
    }
    const body = JSON.stringify(executeSearch(parsed.request.organizationId === orgId ? index : null, parsed.request));
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Request-Id': randomUUID(),
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  server.keepAliveTimeout = 30_000;
  server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
}

/** uWS with a fixed body per query string (the size the service answers it), built once. */
function serveCeiling(port: number, sizesFile: string): void {
  const uws = loadUws();
  const sizes = JSON.parse(readFileSync(sizesFile, 'utf8')) as Record<string, number>;
  const bodies = new Map<string, Buffer>();
  for (const [query, size] of Object.entries(sizes)) {
    const b = Buffer.alloc(size, 0x61);
    b.write('{"data":"');
    b.write('"}', size - 2);
    bodies.set(query, b);
  }
  const fallback = Buffer.from('{}');
  uws
    .App()
    .any('/*', (res, req) => {
      const body = bodies.get(req.getQuery() ?? '') ?? fallback;
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

async function spawnReference(kind: 'node' | 'ceiling', extra: string[]): Promise<Child> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/http.bench.ts', '--serve', kind, '--port', String(port), '--messages', String(MESSAGES), '--contacts', String(CONTACTS), ...extra],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`bench: ${kind} reference exited with ${code}`)));
  });
  return { child, port, stop: () => child.kill('SIGTERM') };
}

// ---------------------------------------------------------------- load

interface LoadResult {
  name: string;
  /** median over the rounds */
  rps: number;
  /** requests/s of each round, in order */
  rounds: number[];
  /** over every request of every round */
  p50: number;
  p99: number;
  mbps: number;
  serverCpu: number;
  loadgenCpu: number;
  requests: number;
}

function cannon(port: number, paths: string[], headers: Record<string, string>, seconds: number, onResponse?: (ms: number) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: CONNECTIONS,
        duration: seconds,
        requests: paths.map((p) => ({ method: 'GET', path: p, headers })),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (onResponse) inst.on('response', (_c, _status, _bytes, ms) => onResponse(ms));
  });
}

interface Target {
  name: string;
  port: number;
  pid: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Loads each target in turn, ROUNDS times (interleaved, so a burst of noise from the shared
 * machine hits one round of every target rather than all rounds of one target).
 */
async function compare(targets: Target[], paths: string[], headers: Record<string, string>): Promise<LoadResult[]> {
  const acc = targets.map(() => ({ rounds: [] as number[], latencies: [] as number[], bytes: 0, seconds: 0, serverCpu: 0, selfCpu: 0, wall: 0, requests: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, t] of targets.entries()) {
      if (round === 0 && WARMUP > 0) await cannon(t.port, paths, headers, WARMUP);
      const a = acc[i];
      const cpu0 = procCpuSeconds(t.pid);
      const self0 = selfCpuSeconds();
      const t0 = performance.now();
      const r = await cannon(t.port, paths, headers, DURATION, (ms) => a.latencies.push(ms));
      const wall = (performance.now() - t0) / 1000;
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
        throw new Error(`bench: ${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      }
      a.rounds.push(r.requests.total / r.duration);
      a.bytes += r.throughput.total;
      a.seconds += r.duration;
      a.serverCpu += procCpuSeconds(t.pid) - cpu0;
      a.selfCpu += selfCpuSeconds() - self0;
      a.wall += wall;
      a.requests += r.requests.total;
      console.log(`  round ${round + 1} ${t.name}: ${fmt(r.requests.total / r.duration)} req/s`);
    }
  }
  return targets.map((t, i) => {
    const a = acc[i];
    const sorted = sortedCopy(a.latencies);
    return {
      name: t.name,
      rps: median(a.rounds),
      rounds: a.rounds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      mbps: a.bytes / a.seconds / 1048576,
      serverCpu: a.serverCpu / a.wall,
      loadgenCpu: a.selfCpu / a.wall,
      requests: a.requests,
    };
  });
}

/** Median over the rounds of (a's requests/s / b's requests/s) in the same round, and its range. */
function ratio(a: LoadResult, b: LoadResult): { median: number; min: number; max: number } {
  const rs = a.rounds.map((x, i) => x / b.rounds[i]);
  return { median: median(rs), min: Math.min(...rs), max: Math.max(...rs) };
}

const row = (r: LoadResult): (string | number)[] => [
  r.name, fmt(r.rps), r.rounds.map((x) => fmt(x)).join(' / '), r.p50.toFixed(2), r.p99.toFixed(2), r.mbps.toFixed(1), `${Math.round(r.serverCpu * 100)}%`, `${Math.round(r.loadgenCpu * 100)}%`,
];
const HEAD = ['target', 'requests/s (median)', 'each round', 'p50 ms', 'p99 ms', 'MiB/s', 'server CPU', 'autocannon CPU'];

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  console.log(`# HTTP benchmark: ${fmt(MESSAGES)} messages, ${fmt(CONTACTS)} contacts, 1 organization`);
  console.log(machine());
  console.log(`load: autocannon, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${DURATION} s a target (after ${WARMUP} s of warm-up each), loopback; it runs in this process and competes with the server for the CPUs`);

  const ds = await dataset(MESSAGES, CONTACTS, SEED);
  const tmp = tempDir('http');
  const children: Child[] = [];
  let service: Server | null = null;
  let serviceInfo: Server | null = null;
  try {
    const store = { DATA_DIR: path.join(tmp.dir, 'data') };
    const imported = await importCli(ds, store);
    const orgId = imported.organizations[0].organization_id;
    const key = await createKey(store, [orgId]);
    const headers = { authorization: `Bearer ${key}` };
    const logWarn = path.join(tmp.dir, 'server-warn.log');
    service = await startServer(store, { logLevel: 'warn', logFile: logWarn });
    // a second server on the same store at LOG_LEVEL=info (one line a request), loaded in the same rounds
    const logInfo = path.join(tmp.dir, 'server-info.log');
    serviceInfo = await startServer(store, { logLevel: 'info', logFile: logInfo });

    const node = await spawnReference('node', []);
    children.push(node);
    const meta = (await (await fetch(`http://127.0.0.1:${node.port}/__classes`)).json()) as { organizationId: string; classes: Record<string, string> };
    if (meta.organizationId !== orgId) throw new Error(`bench: generated organization ${meta.organizationId} is not the imported ${orgId}`);

    // same answers from both, and the sizes the ceiling will serve
    const sizes: Record<string, number> = {};
    const classRows: (string | number)[][] = [];
    for (const [name, query] of Object.entries(meta.classes)) {
      const a = await (await fetch(`${service.url}${SEARCH_PATH}?${query}`, { headers })).text();
      const b = await (await fetch(`http://127.0.0.1:${node.port}${SEARCH_PATH}?${query}`)).text();
      if (a !== b) throw new Error(`bench: ${name}: the service and the node:http reference answer differently`);
      sizes[query] = Buffer.byteLength(a);
      const count = (JSON.parse(a) as { pagination: { count: number } }).pagination.count;
      classRows.push([name, `\`${decodeURIComponent(query.replace(/^organization_id=[^&]+&/, ''))}\``, fmt(count), fmt(sizes[query])]);
    }
    const sizesFile = path.join(tmp.dir, 'sizes.json');
    writeFileSync(sizesFile, JSON.stringify(sizes));
    const ceiling = await spawnReference('ceiling', ['--sizes', sizesFile]);
    children.push(ceiling);

    const queries = Object.entries(meta.classes).filter(([n]) => n !== 'no match').map(([, q]) => q);
    const noMatch = [`${SEARCH_PATH}?${meta.classes['no match']}`];
    const mix = queries.map((q) => `${SEARCH_PATH}?${q}`);
    const rareOnly = [`${SEARCH_PATH}?${meta.classes['rare term']}`];
    const meanSize = queries.reduce((s, q) => s + sizes[q], 0) / queries.length;
    console.log(`\nquery classes (identical bodies from the service and node:http; mean of the mix ${fmt(meanSize)} bytes):`);
    console.log(table(['class', 'parameters', 'matching contacts', 'response bytes'], classRows));

    const targets: Target[] = [
      { name: 'uWS fixed response (ceiling)', port: ceiling.port, pid: ceiling.child.pid! },
      { name: 'node:http + same search', port: node.port, pid: node.child.pid! },
      { name: 'service (LOG_LEVEL=warn)', port: service.port, pid: service.child.pid! },
    ];
    console.log('\nmix of the 5 classes, round robin:');
    const logBefore = statSync(logInfo).size;
    const mixRuns = await compare([...targets, { name: 'service (LOG_LEVEL=info)', port: serviceInfo.port, pid: serviceInfo.child.pid! }], mix, headers);
    const logBytes = statSync(logInfo).size - logBefore;
    const infoRun = mixRuns[3];
    const infoRequests = WARMUP * infoRun.rps + infoRun.requests; // the warm-up is logged too (approximately)
    await serviceInfo.stop();
    serviceInfo = null;
    console.log('rare term only (less search work a request):');
    const rareRuns = await compare(targets, rareOnly, headers);
    console.log('no match, empty page (HTTP, auth and parsing dominate):');
    const emptyRuns = await compare(targets, noMatch, headers);
    const rssNode = procStatus(node.child.pid!);
    const rssCeiling = procStatus(ceiling.child.pid!);
    await new Promise((r) => setTimeout(r, 2000)); // let the last overload drain

    // half of the maximum rate, open loop
    const half = Math.round(mixRuns[2].rps / 2);
    console.log(`service at half its maximum mix rate: ${fmt(half)} req/s, paced, ${DURATION} s`);
    const cpu0 = procCpuSeconds(service.child.pid!);
    const run = paced({ port: service.port, paths: mix, headers, rate: half, durationMs: DURATION * 1000, connections: 64 });
    const samples = await run.done;
    const serverCpuHalf = (procCpuSeconds(service.child.pid!) - cpu0) / DURATION;
    const hs = windowStats(samples, 0, DURATION * 1000);
    if (hs.non2xx > 0 || run.errors > 0) throw new Error(`bench: half load: ${hs.non2xx} non-2xx, ${run.errors} errors`);
    const worst = [...samples].sort((a, b) => b.latency - a.latency).slice(0, 5);
    console.log(`  slowest: ${worst.map((w) => `${w.latency.toFixed(1)} ms due at ${(w.at / 1000).toFixed(3)} s`).join('; ')}`);
    const rssWarn = procStatus(service.child.pid!);
    await service.stop();
    service = null;
    const [ceil, nodeRun, svc] = mixRuns;
    const pct = (r: { median: number; min: number; max: number }) => `${(r.median * 100).toFixed(1)}% (rounds ${(r.min * 100).toFixed(1)}-${(r.max * 100).toFixed(1)}%)`;
    const x = (r: { median: number; min: number; max: number }) => `${r.median.toFixed(2)}× (rounds ${r.min.toFixed(2)}-${r.max.toFixed(2)}×)`;
    console.log('\n## Results\n');
    console.log('### Mix of 5 query classes\n');
    console.log(table(HEAD, mixRuns.map(row)));
    console.log('\n### Rare term only\n');
    console.log(table(HEAD, rareRuns.map(row)));
    console.log('\n### No match (empty page): the HTTP layer, auth and parsing\n');
    console.log(table(HEAD, emptyRuns.map(row)));
    console.log('\n### Service at half of its maximum mix rate (paced, open loop, 64 connections)\n');
    console.log(
      table(['rate req/s', 'answered', 'p50 ms', 'p99 ms', 'max ms', 'queued for a connection', 'server CPU'], [
        [fmt(half), fmt(hs.n), hs.p50.toFixed(2), hs.p99.toFixed(2), hs.max.toFixed(2), fmt(run.queued), `${Math.round(serverCpuHalf * 100)}%`],
      ]),
    );
    const m = (x: { vmRss: number; vmHwm: number }) => `${(x.vmRss / 2 ** 20).toFixed(0)} MiB (peak ${(x.vmHwm / 2 ** 20).toFixed(0)} MiB)`;
    console.log(`\nRSS after the runs: service ${m(rssWarn)}, node:http reference ${m(rssNode)}, ceiling ${m(rssCeiling)}`);
    console.log(`info log: ~${fmt(logBytes / infoRequests)} bytes a request; requests/s at info / at warn: ${x(ratio(infoRun, svc))}`);
    console.log('\n### Goals\n');
    const g1 = ratio(svc, ceil);
    const g2 = ratio(svc, nodeRun);
    const g1r = ratio(rareRuns[2], rareRuns[0]);
    const g2r = ratio(rareRuns[2], rareRuns[1]);
    const g1e = ratio(emptyRuns[2], emptyRuns[0]);
    const g2e = ratio(emptyRuns[2], emptyRuns[1]);
    console.log(`- ≥ 70% of the ceiling's requests/s (mix): ${g1.median >= 0.7 ? 'met' : 'NOT met'}, ${pct(g1)}; rare term only: ${pct(g1r)}; no match: ${pct(g1e)}`);
    console.log(`- ≥ 3× node:http (mix): ${g2.median >= 3 ? 'met' : 'NOT met'}, ${x(g2)}; rare term only: ${x(g2r)}; no match: ${x(g2e)}`);
    console.log(`- p99 at half of the maximum rate (${fmt(half)} req/s): ${hs.p99.toFixed(2)} ms (p99 at full load ${svc.p99.toFixed(2)} ms)`);
    console.log(`\nend: ${machine()}`);
  } finally {
    for (const c of children) c.stop();
    if (service) await service.stop();
    if (serviceInfo) await serviceInfo.stop();
    tmp.cleanup();
  }
}

const serve = flagString('serve', '');
if (serve === 'node') serveNode(flagNumber('port', 0));
else if (serve === 'ceiling') serveCeiling(flagNumber('port', 0), flagString('sizes', ''));
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
