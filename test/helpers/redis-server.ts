/** Starts a throwaway redis-server on a free port in a temp dir, for tests; `stop()` kills it and removes the dir. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './server.js';

export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Kills the server (SIGKILL) but keeps its dir and port, for outage tests. */
  kill(): Promise<void>;
  /** Starts it again on the same port after kill(). */
  restart(): Promise<void>;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let buf = '';
    sock.setTimeout(500, () => {
      sock.destroy();
      resolve(false);
    });
    sock.on('error', () => resolve(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d;
      if (buf.includes('\r\n')) {
        sock.destroy();
        // (a Redis with a password answers, refusing: it is up)
        resolve(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
      }
    });
  });
}

export interface StartRedisOptions {
  /** append-only file with an fsync per write, so data survives kill() and restart() (default: no persistence) */
  persist?: boolean;
  /** `requirepass`: the URL then carries it (`redis://:<password>@...`) */
  password?: string;
}

export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-test-'));
  let proc: ChildProcess | null = null;
  const launch = async (): Promise<void> => {
    const persistence = options.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    proc = spawn(
      'redis-server',
      [
        '--save',
        '',
        ...persistence,
        ...(options.password === undefined ? [] : ['--requirepass', options.password]),
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (Date.now() > deadline) throw new Error(`test: redis-server did not answer PING on port ${port}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async (): Promise<void> => {
    const p = proc;
    proc = null;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  };
  await launch();
  return {
    url:
      options.password === undefined
        ? `redis://127.0.0.1:${port}`
        : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    port,
    restart: launch,
    kill,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
