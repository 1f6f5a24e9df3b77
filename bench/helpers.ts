/**
 * Shared pieces of the HTTP and store benchmarks: the machine, the generated dataset (cached),
 * the real CLIs and server as child processes, /proc readings, and a paced (open-loop) load
 * generator for fixed-rate latency measurements.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ---------- command line ----------

export function flagNumber(name: string, def: number): number {
  const i = process.argv.indexOf('--' + name);
  if (i < 0) return def;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n)) throw new Error(`bench: --${name} needs a number`);
  return n;
}
export function flagString(name: string, def: string): string {
  const i = process.argv.indexOf('--' + name);
  return i < 0 ? def : process.argv[i + 1];
}
export function flagBool(name: string): boolean {
  return process.argv.includes('--' + name);
}

// ---------- formatting ----------

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
export const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);

export function table(head: string[], rows: (string | number)[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** nproc, CPU model, memory, Node version, date: the header of every result. */
export function machine(): string {
  const model =
    /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  return (
    `machine: ${cpus().length} CPUs (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM; ` +
    `node ${process.version}; ${new Date().toISOString()}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`
  );
}

// ---------- percentiles ----------

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
export function sortedCopy(xs: ArrayLike<number>): Float64Array {
  return Float64Array.from(xs).sort();
}

// ---------- processes ----------

import { baseEnv, freePort, type RunResult, runProcess, snapshotImportArgs } from '../test/helpers/server.js';
export { freePort };

/** The parent's environment minus anything that could point at a real deployment (the tests' own list). */
export const cleanEnv = baseEnv;

export type { RunResult };

/** `node --import tsx <script> ...args` from the project root; wall time included. */
export function runNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 3_600_000,
): Promise<RunResult> {
  return runProcess(['--import', 'tsx', script, ...args], env, timeoutMs);
}

export interface Dataset {
  dir: string;
  contacts: string;
  messages: string;
  messageCount: number;
  contactCount: number;
  seed: number;
  /** NDJSON bytes of both files */
  bytes: number;
}

/**
 * Generated NDJSON (scripts/gen.ts, one organization) cached under the temp dir by size and seed,
 * so reruns skip the generation; a `.done` marker guards against a half-written cache.
 */
export async function dataset(messages: number, contacts: number, seed = 42): Promise<Dataset> {
  const dir = path.join(tmpdir(), 'msearch-bench-data', `m${messages}-c${contacts}-s${seed}`);
  const ds = (): Dataset => {
    const c = path.join(dir, 'contacts.ndjson');
    const m = path.join(dir, 'messages.ndjson');
    return {
      dir,
      contacts: c,
      messages: m,
      messageCount: messages,
      contactCount: contacts,
      seed,
      bytes: statSync(c).size + statSync(m).size,
    };
  };
  // A dataset made by another version of the generator is made again: the benches choose their
  // query terms by running the generator in process, so they must serve exactly its output.
  const generator = createHash('sha256')
    .update(readFileSync(path.join(ROOT, 'scripts', 'gen-lib.ts')))
    .update(readFileSync(path.join(ROOT, 'scripts', 'gen.ts')))
    .digest('hex')
    .slice(0, 16);
  const done = path.join(dir, '.done');
  if (existsSync(done) && readFileSync(done, 'utf8').startsWith(`generator ${generator}\n`)) return ds();
  const args = [
    '--messages',
    String(messages),
    '--contacts',
    String(contacts),
    '--organizations',
    '1',
    '--seed',
    String(seed),
    '--out',
    dir,
  ];
  const r = await runNode('scripts/gen.ts', args, cleanEnv({}));
  if (r.code !== 0) throw new Error(`bench: gen failed: ${r.stderr}`);
  writeFileSync(done, `generator ${generator}\n${r.stdout}`);
  return ds();
}

/** REDIS_URL as the server reads it: unset or empty means the embedded store (null). */
export function redisUrlFromEnv(): string | null {
  const url = process.env.REDIS_URL;
  return url === undefined || url === '' ? null : url;
}

export function tempDir(tag: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `msearch-bench-${tag}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ImportSummary {
  organizations: { organization_id: string; version: number; contacts: number; messages: number }[];
  contacts: number;
  messages: number;
  /** the CLI's own measure (store opened to published) */
  seconds: number;
  /** wall time of the whole process, Node and tsx start-up included */
  wallSeconds: number;
  /** peak RSS of the import process, from /proc, sampled every 100 ms */
  peakRssBytes: number;
}

/** `npm run snapshot -- import --contacts F --messages F --json` with a store environment. */
export async function importCli(ds: Dataset, storeEnv: Record<string, string>): Promise<ImportSummary> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...snapshotImportArgs(ds.contacts, ds.messages), '--json'], {
    cwd: ROOT,
    env: cleanEnv(storeEnv),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, procStatus(child.pid!).vmHwm)), 100);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`bench: import failed (${code}): ${stderr}`);
  const s = JSON.parse(stdout.trim().split('\n').pop()!) as Omit<ImportSummary, 'wallSeconds' | 'peakRssBytes'>;
  return { ...s, wallSeconds: (performance.now() - t0) / 1000, peakRssBytes: peak };
}

/** A key with both scopes for the organizations, through the real keys CLI. */
export async function createKey(storeEnv: Record<string, string>, orgs: string[]): Promise<string> {
  const args = [
    'create',
    ...orgs.flatMap((o) => ['--organization-id', o]),
    '--scopes',
    'contacts:read,messages:read',
    '--name',
    'bench',
    '--json',
  ];
  const r = await runNode('src/cli/keys.ts', args, cleanEnv(storeEnv));
  if (r.code !== 0) throw new Error(`bench: keys create failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

/** VmRSS and VmHWM (peak) of a process, in bytes; zeros once it is gone. */
export function procStatus(pid: number): { vmRss: number; vmHwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0) * 1024;
    return { vmRss: kb('VmRSS'), vmHwm: kb('VmHWM') };
  } catch {
    return { vmRss: 0, vmHwm: 0 };
  }
}

const TICKS = 100; // USER_HZ on Linux
/** CPU seconds (user + system) a process has used so far. */
export function procCpuSeconds(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return 0;
  }
}
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : e.isFile() ? statSync(p).size : 0;
  }
  return total;
}

export interface Server {
  url: string;
  port: number;
  adminUrl: string;
  child: ChildProcess;
  /** spawn to first answer of the admin listener (any status), ms */
  listeningMs: number;
  /** spawn to /readyz 200, ms */
  readyMs: number;
  stop(): Promise<void>;
}

/**
 * Starts the real server (`node --import tsx src/main.ts`, or BENCH_SERVER_JS), its log going to `logFile` (a file,
 * as in production behind a log shipper; not a pipe into this process, which runs the load).
 */
export async function startServer(
  storeEnv: Record<string, string>,
  opts: {
    logLevel: string;
    logFile: string;
    readyTimeoutMs?: number;
    pollMs?: number;
    nodeArgs?: string[];
    env?: Record<string, string>;
  },
): Promise<Server> {
  const port = await freePort();
  const adminPort = await freePort();
  const env = cleanEnv({
    ...storeEnv,
    ...opts.env,
    LOG_LEVEL: opts.logLevel,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
  });
  const fd = openSync(opts.logFile, 'a');
  const t0 = performance.now();
  // nodeArgs: e.g. a preload such as bench/gc-observer.ts. BENCH_SERVER_JS=dist/main.js runs the
  // compiled server instead (`npm run build` first), as `npm start` does: its worker threads
  // load compiled modules, not tsx's, which changes their memory.
  // A TypeScript preload (the GC observer) still needs tsx's loader before a compiled entry.
  const entry = process.env.BENCH_SERVER_JS;
  const nodeArgs = opts.nodeArgs ?? [];
  const tsx = !entry || nodeArgs.some((a) => a.endsWith('.ts')) ? ['--import', 'tsx'] : [];
  const args = [...tsx, ...nodeArgs, entry ?? 'src/main.ts'];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', fd, fd],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const server: Server = {
    url: `http://127.0.0.1:${port}`,
    port,
    adminUrl,
    child,
    listeningMs: NaN,
    readyMs: NaN,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 300_000);
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`bench: server exited with ${child.exitCode}; log in ${opts.logFile}:\n${tail(opts.logFile)}`);
    try {
      const r = await fetch(`${adminUrl}/readyz`);
      await r.arrayBuffer();
      if (Number.isNaN(server.listeningMs)) server.listeningMs = performance.now() - t0;
      if (r.status === 200) {
        server.readyMs = performance.now() - t0;
        return server;
      }
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`bench: server not ready in time; log:\n${tail(opts.logFile)}`);
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 25));
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-4000);
  } catch {
    return '';
  }
}

// ---------- paced (open-loop) load ----------

export interface PacedSample {
  /** ms since the start of the run when the request was due */
  at: number;
  /** due time to complete response, ms: includes any wait for a free connection */
  latency: number;
  status: number;
}

export interface PacedRun {
  samples: PacedSample[];
  /** requests that found every connection busy and waited */
  queued: number;
  errors: number;
  stop(): Promise<PacedSample[]>;
  done: Promise<PacedSample[]>;
}

/**
 * Sends GET requests at a fixed rate (evenly spaced, open loop) over a pool of keep-alive
 * connections, cycling through `paths`. Latency is measured from when a request was due, so a
 * stall of the server shows in full (no coordinated omission). autocannon's `overallRate` is
 * not used for this: it sends each connection's quota back to back at the start of every second.
 */
export function paced(opts: {
  port: number;
  paths: string[];
  headers: Record<string, string>;
  rate: number;
  durationMs: number;
  connections?: number;
}): PacedRun {
  const conns = opts.connections ?? 64;
  const headerText = Object.entries(opts.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const reqs = opts.paths.map((p) =>
    Buffer.from(`GET ${p} HTTP/1.1\r\nHost: 127.0.0.1:${opts.port}\r\n${headerText}\r\n`),
  );
  const samples: PacedSample[] = [];
  const idle: Conn[] = [];
  const waiting: number[] = []; // due times of requests waiting for a connection
  let sent = 0;
  let stopped = false;
  let inFlight = 0;
  const run: PacedRun = {
    samples,
    queued: 0,
    errors: 0,
    stop: async () => finish(),
    done: null as unknown as Promise<PacedSample[]>,
  };
  let resolveDone!: (s: PacedSample[]) => void;
  run.done = new Promise((r) => (resolveDone = r));
  let t0 = performance.now();

  class Conn {
    sock: Socket;
    buf: Buffer = Buffer.alloc(0);
    due = 0;
    constructor() {
      this.sock = createConnection({ port: opts.port, host: '127.0.0.1', noDelay: true });
      this.sock.on('data', (d: Buffer) => this.onData(d));
      this.sock.on('error', () => {
        run.errors++;
      });
      this.sock.on('connect', () => {
        idle.push(this);
        if (idle.length === conns) begin();
      });
    }
    send(due: number, i: number): void {
      this.due = due;
      inFlight++;
      this.sock.write(reqs[i % reqs.length]);
    }
    onData(d: Buffer): void {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.buf.subarray(0, end).toString('latin1');
      const len = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buf.length < end + 4 + len) return;
      const status = Number(head.slice(9, 12));
      this.buf = this.buf.subarray(end + 4 + len);
      inFlight--;
      samples.push({ at: this.due, latency: performance.now() - t0 - this.due, status });
      const next = waiting.shift();
      if (next !== undefined) this.send(next, sent++);
      else idle.push(this);
      if (stopped && inFlight === 0) resolveDone(samples);
    }
  }
  const pool = Array.from({ length: conns }, () => new Conn());
  let issued = 0;
  const tick = () => {
    if (stopped) return;
    const now = performance.now() - t0;
    const end = Math.min(now, opts.durationMs);
    const due = Math.floor((end * opts.rate) / 1000);
    for (; issued < due; issued++) {
      const at = (issued * 1000) / opts.rate;
      const c = idle.pop();
      if (c) c.send(at, sent++);
      else {
        run.queued++;
        waiting.push(at);
      }
    }
    if (now >= opts.durationMs) void finish();
    else setTimeout(tick, 1);
  };
  // the schedule starts once every connection is open (or after a second at most)
  let begun = false;
  const begin = () => {
    if (begun) return;
    begun = true;
    t0 = performance.now();
    tick();
  };
  setTimeout(begin, 1000);
  function finish(): Promise<PacedSample[]> {
    if (!stopped) {
      stopped = true;
      const close = () => {
        for (const c of pool) c.sock.destroy();
      };
      void run.done.then(close);
      if (inFlight === 0 && waiting.length === 0) resolveDone(samples);
      // a dead server must not hang the bench
      setTimeout(() => resolveDone(samples), 30_000).unref();
    }
    return run.done;
  }
  return run;
}

/** p50/p99/max and count of the samples whose due time falls in [from, to). */
export function windowStats(
  samples: PacedSample[],
  from: number,
  to: number,
): { n: number; p50: number; p99: number; max: number; non2xx: number } {
  const xs = samples.filter((s) => s.at >= from && s.at < to);
  const sorted = sortedCopy(xs.map((s) => s.latency));
  return {
    n: xs.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
    non2xx: xs.filter((s) => s.status < 200 || s.status > 299).length,
  };
}
