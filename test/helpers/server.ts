/** Runs the real server and CLI as child processes, the way an operator would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyRecord } from '../../src/auth/key-record.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A port that was free a moment ago (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether `port` can be bound on 127.0.0.1 right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A fresh temporary DATA_DIR; `cleanup` removes it. */
export function tempDataDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'msearch-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Environment for children: the parent's, minus anything that could point at a real deployment. */
export function baseEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of [
    'PORT',
    'HOST',
    'ADMIN_PORT',
    'ADMIN_HOST',
    'REDIS_URL',
    'DATA_DIR',
    'LOG_LEVEL',
    'SUNSET_AT',
    'NODE_OPTIONS',
    'RATE_LIMIT_RPS',
    'RATE_LIMIT_BURST',
    'SHUTDOWN_TIMEOUT_MS',
    'SLOW_CLIENT_BUFFER_MB',
    'INDEX_BUILD_THREAD',
    'SERVER_THREADS',
    'SERVING_THREAD_FAULT_HOOK',
    'ORGANIZATIONS',
  ])
    delete env[k];
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** wall time in ms */
  ms: number;
}

/** Node's arguments for `npm run snapshot -- import --contacts C --messages M` from the sources. */
export function snapshotImportArgs(contacts: string, messages: string): string[] {
  return ['--import', 'tsx', 'src/cli/snapshot.ts', 'import', '--contacts', contacts, '--messages', messages];
}

/** Runs `node --import tsx <script> ...args` from the project root and collects its output. */
export function runNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<RunResult> {
  return runProcess(['--import', 'tsx', script, ...args], env, timeoutMs);
}

/**
 * Runs `node ...nodeArgs` from the project root (the one place tests, benches and scripts spawn a
 * tool and collect its output); killed after `timeoutMs`. `ms` is its wall time.
 */
export function runProcess(nodeArgs: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, nodeArgs, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

/**
 * One GET on a fresh connection (no keep-alive), its status and body: with serving threads the
 * kernel routes each such request to a thread anew.
 */
export function freshGet(url: string, authorization: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = http.get(url, { agent: false, headers: { authorization } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.setTimeout(5000, () => r.destroy(new Error('timeout')));
  });
}

/** The keys CLI (`npm run keys -- ...` without npm's own output). */
export function keysCli(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult> {
  return runNode('src/cli/keys.ts', args, env);
}

/** The fields of a key as `keys list --json` shows it (CONTRACT 8): never the secret or its hash. */
export const LISTED_KEY_FIELDS = [
  'created_at',
  'expires_at',
  'last_used_at',
  'name',
  'organization_ids',
  'prefix',
  'revoked_at',
  'scopes',
];

/** A key record to put into a store directly (a test needs a key the CLI would not make, or no CLI run). */
export function keyRecord(
  prefix: string,
  hash: string,
  organizationIds: string[],
  over: Partial<KeyRecord> = {},
): KeyRecord {
  return {
    prefix,
    name: prefix,
    hash,
    organization_ids: organizationIds,
    scopes: ['contacts:read', 'messages:read'],
    created_at: new Date().toISOString(),
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
    ...over,
  };
}

export interface CreatedKey {
  key: string;
  prefix: string;
  name: string;
  organization_ids: string[];
  scopes: string[];
  created_at: string;
  expires_at: string | null;
}

/** Creates a key through the real CLI with --json. */
export async function createKey(
  env: NodeJS.ProcessEnv,
  orgs: string[],
  scopes: string,
  more: string[] = [],
): Promise<CreatedKey> {
  const args = ['create', ...orgs.flatMap((o) => ['--organization-id', o]), '--scopes', scopes, '--json', ...more];
  const r = await keysCli(args, env);
  if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as CreatedKey;
}

export interface RunningServer {
  url: string;
  adminUrl: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then the exit code */
  stop(): Promise<number | null>;
}

/** Starts `src/main.ts` (or `dist/main.js`) on free ports and waits until /readyz answers 200. */
export async function startServer(
  extraEnv: Record<string, string | undefined>,
  opts: {
    waitReady?: boolean;
    /** extra node options before the script, e.g. ['--import', './x.ts'] */ nodeArgs?: string[];
    /** run the compiled server, `dist/main.js` (`npm run build`), instead of the TypeScript */ compiled?: boolean;
  } = {},
): Promise<RunningServer> {
  const port = await freePort();
  // the kernel may hand out the same free port twice in a row (a CI run failed on
  // "ADMIN_PORT must differ from PORT (both 45063)")
  let adminPort = await freePort();
  while (adminPort === port) adminPort = await freePort();
  const env = baseEnv({
    LOG_LEVEL: 'info',
    ...extraEnv,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
  });
  const nodeArgs = opts.nodeArgs ?? [];
  const args = opts.compiled ? [...nodeArgs, 'dist/main.js'] : ['--import', 'tsx', ...nodeArgs, 'src/main.ts'];
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const server: RunningServer = {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
  if (opts.waitReady === false) return server;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${server.adminUrl}/readyz`);
      if (r.status === 200) return server;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`server not ready within 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
