/**
 * Loads a snapshot's index off the request path: a worker thread that opens its own connection
 * to the same store reads and verifies it into shared memory (building it only for an older
 * format-1 snapshot) and hands the flat index back without a copy; this thread rebuilds the term
 * dictionary in slices, with the event loop free between them, so searches keep being answered.
 *
 * The worker runs TypeScript through tsx's API registered inside it, so it works whether the
 * server runs as `tsx src/main.ts` or `node --import tsx src/main.ts`. When it cannot start, the
 * builder logs that once and builds on the main thread instead.
 */
import { Worker } from 'node:worker_threads';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import type { OrgIndex } from '../index/org-index.js';
import type { OrgData } from '../model/records.js';
import { type FlatIndex, wrapIndex, wrapIndexAsync } from '../store/flat-index.js';
import type { SnapshotRef, Store } from '../store/store.js';
import type { WorkerReply, WorkerRequest } from './worker-protocol.js';

/** A loaded snapshot's index and the counts the Catalog reports. */
export interface BuiltIndex {
  index: OrgIndex;
  /** the shared sections `index` wraps, when it was loaded from them (serving threads wrap them too) */
  flat?: FlatIndex;
  messages: number;
  contacts: number;
}

export interface BuilderLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

interface Pending {
  resolve: (b: BuiltIndex) => void;
  reject: (e: Error) => void;
}

/** Where the worker's entry module is (kept in one place: a compiled dist/ build points it at .js). */
export function workerEntry(): string {
  return new URL('./build-worker.ts', import.meta.url).href;
}

/** Builds indexes, in a worker thread when it can. */
export class IndexBuilder {
  private readonly store: Store;
  private readonly env: NodeJS.ProcessEnv | null;
  private readonly log: BuilderLogger;
  private readonly build: ((data: OrgData) => OrgIndex) | null;
  private worker: Worker | null = null;
  private workerFailed = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /**
   * `env` names the store for the worker (null: no worker). `build`, when given (tests), replaces
   * buildIndex and forces the main thread.
   */
  constructor(store: Store, env: NodeJS.ProcessEnv | null, log: BuilderLogger, build?: (data: OrgData) => OrgIndex) {
    this.store = store;
    this.env = env;
    this.log = log;
    this.build = build ?? null;
    if (env === null && build === undefined) this.log.info({}, 'catalog: the store cannot be reopened by a worker; building indexes on the main thread');
  }

  /** 'worker' or 'main': where the next build runs. */
  get mode(): 'worker' | 'main' {
    return this.build === null && this.env !== null && !this.workerFailed ? 'worker' : 'main';
  }

  async load(ref: SnapshotRef): Promise<BuiltIndex> {
    if (this.mode === 'main') return this.onMainThread(ref);
    const worker = this.spawn();
    if (worker === null) return this.onMainThread(ref);
    try {
      return await new Promise<BuiltIndex>((resolve, reject) => {
        const id = this.nextId++;
        this.pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ id, ref } satisfies WorkerRequest);
      });
    } catch (err) {
      // The worker never came up: this build, and every later one, runs here.
      if (this.workerFailed) return this.onMainThread(ref);
      throw err;
    }
  }

  private retire(): void {
    const w = this.worker;
    this.worker = null;
    if (w) { w.removeAllListeners('exit'); w.removeAllListeners('error'); w.on('error', () => {}); void w.terminate(); }
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  private async onMainThread(ref: SnapshotRef): Promise<BuiltIndex> {
    if (this.build !== null) {
      const data = await this.store.loadSnapshot(ref);
      return { index: this.build(data), messages: data.messages.count, contacts: data.contacts.length };
    }
    const flat = await this.store.loadFlatIndex(ref);
    return { index: wrapIndex(flat), flat, messages: flat.messageCount, contacts: flat.contactCount };
  }

  private spawn(): Worker | null {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      const tsxApi = import.meta.resolve('tsx/esm/api');
      const entry = workerEntry();
      // tsx's loader is registered inside the worker before the TypeScript entry is imported:
      // `execArgv: ['--import', 'tsx']` does not apply to a worker's entry point on Node 20.
      const boot = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
      worker = new Worker(boot, { eval: true, execArgv: [], workerData: { env: this.env }, name: 'index-build' });
    } catch (err) {
      this.giveUp(err as Error);
      return null;
    }
    let online = false;
    worker.once('online', () => { online = true; });
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (err: Error) => {
      if (this.worker === worker) this.worker = null;
      if (!online) this.giveUp(err);
      this.failAll(new Error(`catalog: build worker failed: ${err.message}`));
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new Error(`catalog: build worker exited with code ${code}`));
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  // The worker could not start: every later build runs on the main thread.
  private giveUp(err: Error): void {
    if (this.workerFailed) return;
    this.workerFailed = true;
    this.log.warn({ err: err.message }, 'catalog: build worker cannot start; building indexes on the main thread');
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  private onReply(reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    if (p === undefined) return;
    this.pending.delete(reply.id);
    // An idle worker is stopped: its heap (a whole decoded snapshot's garbage) would otherwise
    // stay around and its collector compete with the request thread. Starting one is ~0.1 s.
    if (this.pending.size === 0) this.retire();
    if (reply.kind === 'error') { p.reject(new Error(reply.message)); return; }
    const flat = reply.flat;
    wrapIndexAsync(flat, yieldToRequests).then(
      (index) => p.resolve({ index, flat, messages: flat.messageCount, contacts: flat.contactCount }),
      p.reject,
    );
  }
}
