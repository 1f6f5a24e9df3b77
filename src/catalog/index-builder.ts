/**
 * Loads a snapshot's index. A format-2 snapshot (the built index) is read, verified and copied
 * into shared memory on this thread, chunk by chunk, with the event loop free between steps, so
 * searches keep being answered; its dictionaries are read in place (shared-dictionary.ts). An older format-1
 * snapshot needs its index built: off the request path, in a worker thread that opens its own
 * connection to the same store and hands the flat index back in shared memory (no copy).
 *
 * The worker starts through startModuleWorker (compiled or through tsx). When it cannot start,
 * the builder logs that once and builds on the main thread instead.
 */
import type { Worker } from 'node:worker_threads';
import type { OrgIndex } from '../index/org-index.js';
import type { OrgData } from '../model/records.js';
import { type FlatIndex, lazyIndex } from '../store/flat-index.js';
import type { PackedFlat } from '../store/packed-flat.js';
import { OlderFormatError, type SnapshotRef, type SnapshotStore } from '../store/snapshot-store.js';
import type { StoreConfig } from '../store/stores.js';
import type { WorkerReply, WorkerRequest } from './worker-protocol.js';
import { collectGarbage, shrinkHeap } from '../runtime/collect-garbage.js';
import { startModuleWorker } from '../runtime/module-worker.js';

/** Young generation of the build worker's heap, MB (see spawn). */
const BUILD_WORKER_YOUNG_MB = 4;

/** A loaded snapshot's index and the counts the Catalog reports. */
export interface BuiltIndex {
  /** (a loaded flat's is wrapped on first read: lazyIndex) */
  readonly index: OrgIndex;
  /** the shared sections `index` wraps, when it was loaded from them (serving threads wrap them too) */
  readonly flat?: FlatIndex;
  /** the same, packed (store/packed-flat.ts): what the main thread holds and posts to its threads */
  readonly packed?: PackedFlat | null;
  /** FlatIndex.digest of a loaded flat: a reload of the same content keeps this index */
  readonly digest?: string;
  messages: number;
  contacts: number;
  /** lets go of a wrapped `index` that nothing read for a while (LazyIndex; absent: kept) */
  dropIfIdle?(): boolean;
}

export interface BuilderLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** How long a load in the build worker may take before the worker is stopped (see load). */
const LOAD_DEADLINE_MS = 10 * 60_000;

interface Pending {
  /** the index in service, given back when the snapshot's content is the same */
  current: BuiltIndex | undefined;
  /** clears the load's deadline */
  done: () => void;
  resolve: (b: BuiltIndex) => void;
  reject: (e: Error) => void;
}

/** Builds indexes, in a worker thread when it can. */
export class IndexBuilder {
  private readonly store: SnapshotStore;
  private readonly storeConfig: (() => StoreConfig) | null;
  private readonly log: BuilderLogger;
  private readonly build: ((data: OrgData) => OrgIndex) | null;
  private worker: Worker | null = null;
  private workerFailed = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /**
   * `storeConfig` names the store the worker opens, asked at each start of the worker (a cluster's
   * nodes known by then; null: no worker). `build`, when given (tests), replaces buildIndex and
   * forces the main thread.
   */
  constructor(
    store: SnapshotStore,
    storeConfig: (() => StoreConfig) | null,
    log: BuilderLogger,
    build?: (data: OrgData) => OrgIndex,
    loadDeadlineMs: number = LOAD_DEADLINE_MS,
  ) {
    this.loadDeadlineMs = loadDeadlineMs;
    this.store = store;
    this.storeConfig = storeConfig;
    this.log = log;
    this.build = build ?? null;
    if (storeConfig === null && build === undefined)
      this.log.info({}, 'catalog: the store cannot be reopened by a worker; building indexes on the main thread');
  }

  /** how long a load in the worker may take before the worker is stopped (LOAD_DEADLINE_MS) */
  private readonly loadDeadlineMs: number;

  /** 'worker' or 'main': where the next build runs. */
  private where: 'snapshot' | 'worker' | 'main' | 'unchanged' | null = null;
  /**
   * Set once the server answers requests. Before (cold start) a snapshot is read right here:
   * fastest, nothing to protect. After, the worker reads it, so the request thread only wraps
   * the sections (measured at 1M: reload p99 12.9x steady when read here).
   */
  serving = false;

  /**
   * How the last load went: 'snapshot' (a format-2 snapshot read as stored, no build), 'worker'
   * (an older snapshot built in the worker thread), 'main' (built on this thread) or
   * 'unchanged' (the same content as the index in service: verified, and that index kept).
   */
  get mode(): 'snapshot' | 'worker' | 'main' | 'unchanged' {
    return this.where ?? this.buildsIn();
  }

  private buildsIn(): 'worker' | 'main' {
    return this.build === null && this.storeConfig !== null && !this.workerFailed ? 'worker' : 'main';
  }

  /**
   * Call when a pass over the store's organizations is over: an idle worker is stopped, as its
   * heap (a whole decoded snapshot's garbage) would otherwise stay around and its collector
   * compete with the request threads. Not after each load: starting a worker costs ~70 ms (and a
   * store connection), which made a reload of 300 small organizations take 24-41 s.
   */
  idle(): void {
    if (this.pending.size === 0) this.retire();
  }

  /** Call once a loaded index replaced another: the old one's memory is given back now. */
  released(): void {
    collectGarbage();
  }

  /**
   * Call once the start's loads are over, before saying ready: their garbage (decoded chunks,
   * build scratch) is collected and the young generation, grown during the start, shrunk, now
   * rather than by V8's memory reducer ~8 s later (shrinkHeap). Measured at 1M, compiled server,
   * RSS 1-3 s after ready: 278-280 -> 265-271 MiB when this was a plain gc(); with shrinkHeap, RSS
   * at ready is the settled figure (bench/RESULTS.md, session 31).
   */
  started(): Promise<void> {
    return shrinkHeap();
  }

  /**
   * The index of snapshot `ref`. `current`, the organization's index in service: when the
   * snapshot's content is the same (its digest; a re-import of unchanged data), its chunks are
   * verified and `current` itself is given back, so such a reload copies nothing and its memory
   * does not double (a corrupt snapshot is still refused).
   */
  async load(ref: SnapshotRef, current?: BuiltIndex): Promise<BuiltIndex> {
    const unchanged = this.build === null ? current?.digest : undefined;
    if (this.build === null && (!this.serving || this.buildsIn() === 'main')) {
      // A format-2 snapshot is read, verified and copied into shared memory right here, one
      // chunk per step with the event loop free between them, then wrapped (nothing rebuilt).
      // Measured faster and leaner than a worker (whose start alone took 1-2 s, and
      // whose shared buffers outlived reloads). Only an older snapshot needs a build: a worker.
      try {
        const flat = await this.store.loadChangedFlatIndex(ref, unchanged, { build: false });
        if (flat === null) return this.kept(current);
        const built = lazyIndex(flat);
        this.where = 'snapshot';
        // `flat` goes along: serving threads get these same shared sections, not a copy of them.
        return built;
      } catch (err) {
        if (!(err instanceof OlderFormatError)) throw err;
      }
    }
    if (this.buildsIn() === 'main') return this.onMainThread(ref, current);
    const worker = this.spawn();
    if (worker === null) return this.onMainThread(ref, current);
    try {
      return await new Promise<BuiltIndex>((resolve, reject) => {
        this.where = 'worker';
        const id = this.nextId++;
        // A worker that neither answers nor ends would hold the catalog's one queue, and with it
        // every later reload and check (a review). Far past any real load (10M: ~7 s; each store
        // command has its own 10 s timeout), it is stopped: this load fails, named, and the next
        // one starts a new worker. (A thread with no uWS in it can be terminated safely.)
        const deadline = setTimeout(() => {
          if (!this.pending.has(id)) return;
          this.retire();
          this.failAll(
            new Error(`catalog: the build worker gave no answer within ${this.loadDeadlineMs / 1000} s; stopped`),
          );
        }, this.loadDeadlineMs).unref();
        this.pending.set(id, { current, resolve, reject, done: () => clearTimeout(deadline) });
        worker.ref();
        worker.postMessage({ id, ref, unchanged } satisfies WorkerRequest);
      });
    } catch (err) {
      // The worker never came up: this build, and every later one, runs here.
      if (this.workerFailed) return this.onMainThread(ref, current);
      throw err;
    }
  }

  /** The index in service, kept for a snapshot of the same content (`current` came with its digest). */
  private kept(current: BuiltIndex | undefined): BuiltIndex {
    this.where = 'unchanged';
    return current!;
  }

  private retire(): void {
    const w = this.worker;
    this.worker = null;
    if (w) {
      w.removeAllListeners('exit');
      w.removeAllListeners('error');
      w.on('error', () => {});
      void w.terminate();
    }
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  private async onMainThread(ref: SnapshotRef, current: BuiltIndex | undefined): Promise<BuiltIndex> {
    this.where = 'main';
    if (this.build !== null) {
      const data = await this.store.loadSnapshot(ref);
      return { index: this.build(data), messages: data.messages.count, contacts: data.contacts.length };
    }
    const flat = await this.store.loadChangedFlatIndex(ref, current?.digest);
    // (a digest is only given with `current`, so null comes with it)
    if (flat === null) return this.kept(current);
    return lazyIndex(flat);
  }

  private spawn(): Worker | null {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      worker = startModuleWorker(import.meta.url, 'build-worker', {
        execArgv: [],
        workerData: { store: this.storeConfig!() },
        name: 'index-build',
        // A load allocates little on the JS heap (the sections are shared buffers), but at V8's
        // default the young generation grew to 16 MB semi-spaces during one: a reload's peak RSS
        // carried them (measured below, bench/RESULTS.md session 13).
        resourceLimits: { maxYoungGenerationSizeMb: BUILD_WORKER_YOUNG_MB },
      });
    } catch (err) {
      this.giveUp(err as Error);
      return null;
    }
    let online = false;
    worker.once('online', () => {
      online = true;
    });
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
    for (const p of all) {
      p.done();
      p.reject(err);
    }
  }

  private onReply(reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    if (p === undefined) return;
    this.pending.delete(reply.id);
    p.done();
    if (reply.kind === 'error') {
      p.reject(new Error(reply.message));
      return;
    }
    if (reply.kind === 'unchanged') {
      // (the worker is sent a digest only with `current`)
      p.resolve(this.kept(p.current));
      return;
    }
    const flat = reply.flat;
    try {
      p.resolve(lazyIndex(flat));
    } catch (err) {
      p.reject(err as Error);
    }
  }
}
