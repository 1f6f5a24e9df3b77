/**
 * A throwaway Redis Cluster for tests: 3 masters + 3 replicas on free ports in a temp dir,
 * created with `redis-cli --cluster create`, ready once every node reports `cluster_state:ok`.
 * `stop()` kills every node and removes the dir. A short cluster-node-timeout keeps failovers
 * (kill a master, its replica takes over) within a few seconds.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, portIsFree } from './server.js';

const run = promisify(execFile);

export interface TestCluster {
  /** REDIS_URL naming one node (the service detects the cluster) */
  url: string;
  ports: number[];
  /** The port of the master currently serving `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /** SIGKILL one node. */
  kill(port: number): Promise<void>;
  /** Starts a killed node again on its port, with its cluster config (it rejoins); resolves once it answers PING. */
  restart(port: number): Promise<void>;
  /** Waits until every live node says cluster_state:ok and `port`'s slots have a live master. */
  waitHealthy(ms?: number): Promise<void>;
  stop(): Promise<void>;
}

export const NODE_TIMEOUT_MS = 1_000;

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

async function until(what: string, ms: number, fn: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await fn()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`test cluster: timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts 6 nodes and joins them as 3 masters with one replica each. A node whose port or bus port
 * (port + 10000, which the kernel may have handed to an outgoing socket meanwhile) is taken fails
 * to start; the whole cluster is then started again on new ports, up to 3 times, and the last
 * failure names what it waited for.
 */
export async function startCluster(): Promise<TestCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce();
    } catch (err) {
      if (attempt === 3) throw err;
      console.error(
        `# test cluster: attempt ${attempt} failed (${(err as Error).message}); starting again on new ports`,
      );
    }
  }
}

async function startClusterOnce(): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  const ports: number[] = [];
  while (ports.length < 6) {
    const p = await freePort();
    // The cluster bus listens on port + 10000: both must be free and below 65536.
    if (p + 10000 < 65536 && !ports.includes(p) && (await portIsFree(p + 10000))) ports.push(p);
  }
  const procs = new Map<number, ChildProcess>();
  const startNode = (port: number) =>
    procs.set(
      port,
      spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          String(NODE_TIMEOUT_MS),
          '--save',
          '',
          '--appendonly',
          'no',
          '--daemonize',
          'no',
          // Replicas sync at once (not after the default 5 s diskless delay) and always may take over.
          '--repl-diskless-sync-delay',
          '0',
          '--cluster-replica-validity-factor',
          '0',
        ],
        { stdio: 'ignore' },
      ),
    );
  for (const port of ports) startNode(port);
  const live = () =>
    ports.filter((p) => {
      const c = procs.get(p);
      return c && c.exitCode === null && c.signalCode === null;
    });
  const cluster: TestCluster = {
    url: `redis://127.0.0.1:${ports[0]}`,
    ports,
    async masterOf(key) {
      for (const p of live()) {
        const slot = Number((await cli(p, 'CLUSTER', 'KEYSLOT', key)).trim());
        const nodes = await cli(p, 'CLUSTER', 'NODES');
        for (const line of nodes.split('\n')) {
          const f = line.split(' ');
          if (!f[2]?.includes('master') || f[2].includes('fail')) continue;
          for (const range of f.slice(8)) {
            const [a, b] = range.split('-').map(Number);
            if (slot >= a && slot <= (b ?? a)) return Number(f[1].split(':')[1].split('@')[0]);
          }
        }
      }
      throw new Error(`test cluster: no master for ${key}`);
    },
    async kill(port) {
      const p = procs.get(port);
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        p.once('exit', () => resolve());
        p.kill('SIGKILL');
      });
    },
    async restart(port) {
      startNode(port);
      await until(`node ${port} to answer PING`, 10_000, async () => (await cli(port, 'PING')).includes('PONG'));
    },
    async waitHealthy(ms = 30_000) {
      await until('cluster_state:ok on every live node', ms, async () => {
        for (const p of live()) if (!(await cli(p, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        return true;
      });
    },
    async stop() {
      await Promise.all(ports.map((p) => cluster.kill(p)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await until('every node to answer PING', 10_000, async () => {
      for (const p of ports) if (!(await cli(p, 'PING')).includes('PONG')) return false;
      return true;
    });
    await run(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
      { timeout: 30_000 },
    );
    await cluster.waitHealthy();
    // A replica only takes over once it has synced with its master.
    await until('every replica to sync', 15_000, async () => {
      let up = 0;
      for (const p of ports) if ((await cli(p, 'INFO', 'replication')).includes('master_link_status:up')) up++;
      return up === 3;
    });
    // Every node must know every other one before a client's slot map is trustworthy.
    await until('every node to see 6 nodes', 10_000, async () => {
      for (const p of ports)
        if ((await cli(p, 'CLUSTER', 'INFO')).match(/cluster_known_nodes:(\d+)/)?.[1] !== '6') return false;
      return true;
    });
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
