/**
 * The main thread's side of SERVER_THREADS > 1: starts the serving threads, shares each loaded
 * index with them (SharedArrayBuffer sections: no copy), answers their key-store calls (the main
 * thread owns the store), adds their response counts to the one metrics registry, replaces a
 * thread that died, and drains them all on shutdown.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { KeyListing } from '../auth/key-cache.js';
import type { SharedRateLimit } from '../auth/rate-limit.js';
import type { Logger } from 'pino';
import type { BuiltIndex } from '../catalog/index-builder.js';
import type { Config } from '../config/config.js';
import type { Metrics } from '../metrics/metrics.js';
import { deriveDictionaries, flattenIndex, shareFlat } from '../store/flat-index.js';
import { type PackedFlat, packFlat } from '../store/packed-flat.js';
import type { KeyRecord } from '../auth/key-record.js';
import type { ServingKeyStore } from '../auth/key-store.js';
import { startModuleWorker } from '../runtime/module-worker.js';
import type { FromThread, KeyListingMessage, ServingState, ServingThreadData, ToThread } from './thread-protocol.js';
import { within } from '../runtime/within.js';

export interface ThreadPoolDeps {
  config: Config;
  /** the key store; the threads' key lookups and last-use writes are made on it, on this thread */
  keys: ServingKeyStore;
  /**
   * Once stopping: takes the threads' last key uses, written later by this thread within its own
   * bounded store close (KeyCache.noteUses). Each thread waited for its write before it stopped,
   * and a paused Redis held that for its 10 s command timeout (a shutdown of 12.5 s: an audit).
   */
  laterUses?: (uses: Map<string, string>) => void;
  /**
   * Called with what a thread's key lookup read, before the thread gets it (KeyCache.afterLookup:
   * a key the thread will refuse is refused by every thread first)
   */
  afterLookup?: (prefix: string, record: KeyRecord | null, startedAt: number) => Promise<void>;
  metrics: Metrics;
  logger: Logger;
  /** the catalog's state, read when it is posted (every 250 ms and after each load) */
  state: () => ServingState;
  /** the token buckets of RATE_LIMIT_RPS, shared with every thread; null when off */
  rateLimit: SharedRateLimit | null;
  /** the bucket of store lookups for unknown key prefixes, shared with every thread */
  keyLookups: SharedRateLimit;
  /** the bytes held for slow readers, counted for the process (InFlight.attachHeld) */
  slowClientHeld: SharedArrayBuffer;
  faultHook?: boolean;
}

interface Slot {
  name: string;
  worker: Worker;
  /** this side of the thread's key-listing channel */
  keysPort: MessagePort;
  /** last seq the thread acknowledged */
  acked: number;
  keysReady: boolean;
  listening: boolean;
  stopping: boolean;
  /** a replacement was started (the thread reported a crash, or exited) */
  replaced: boolean;
  /** the thread has ended (or will never serve: it could not listen): nothing waits for its acks */
  exited: boolean;
  /** what the thread's 'stopped' said: its answers in flight finished (null: not stopped yet) */
  drained: boolean | null;
  /**
   * the thread missed an ack's deadline (ackedOrLate): nothing waits for it until it acknowledges
   * again (a hung thread cost every later version and state post 30 s, and logged 4 times a second)
   */
  behind: boolean;
  /** the seq it missed: it is waited for again once it acknowledged that one */
  behindSeq: number;
}

/** The first wait before another try at a thread that could not be replaced; doubled up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;

const STATE_MS = 250;
// How long a /metrics scrape waits for the threads' counts.
const FLUSH_WAIT_MS = 500;
/** How long a new version or state waits for every thread's ack before going on without it (ackedOrLate). */
const ACK_WAIT_MS = 30_000;
/**
 * A serving thread's young generation (V8's default is 48 MB an isolate). The request path
 * allocates little, so a small one costs no throughput, and each thread's RSS is ~20 MB lower
 * (1M, 2 threads, interleaved runs: RSS 380-386 vs 418-437 MB at 8 vs 48 MB, req/s no lower).
 */
const SERVING_YOUNG_GENERATION_MB = 8;

export class ThreadPool {
  private readonly slots: Slot[] = [];
  private readonly flats = new Map<string, { version: number; flat: PackedFlat }>();
  private readonly waiters: Array<{ seq: number; resolve: () => void }> = [];
  /**
   * Replaced threads that have not ended yet: a crashed one finishes its answers in flight (at
   * most 5 s) before it exits, holding its connections. The process must not exit before them
   * (uv_loop_close with open handles aborts it, exit 134: a review), so stop() stops them too.
   */
  private readonly dying = new Map<Worker, Slot>();
  private seq = 0;
  private stopping = false;
  private lastState: ServingState = { ready: false, unavailable: [] };
  private timer: NodeJS.Timeout | null = null;

  private readonly deps: ThreadPoolDeps;
  private syncedReady = false;
  /** the newest key listing, sent to a thread that starts later */
  private listingMessage: KeyListingMessage | null = null;
  private readonly keyGeneration = new Int32Array(new SharedArrayBuffer(4));

  constructor(deps: ThreadPoolDeps) {
    this.deps = deps;
  }

  /** Starts every thread; resolves once all listen (rejects if one cannot). */
  async start(): Promise<void> {
    const n = this.deps.config.serverThreads;
    await Promise.all(Array.from({ length: n }, (_, i) => this.spawn(i)));
    this.timer = setInterval(() => void this.postState(), STATE_MS);
    this.timer.unref();
  }

  /**
   * True once every thread that listens has the catalog's ready state and its keys loaded. A
   * replacement not listening yet takes no request: /readyz answered 503 for a moment at every
   * replacement (a regression audit: 2 of 150 probes while threads crashed).
   */
  get ready(): boolean {
    const serving = (s: Slot): boolean => s.listening && !s.exited;
    return this.syncedReady && this.slots.some(serving) && this.slots.every((s) => !serving(s) || s.keysReady);
  }

  /** a prefault asked for before the first thread was started (the start's first load) */
  private pendingPrefault: ToThread | null = null;

  /**
   * Has the first serving thread touch `buffer`'s pages (a PrefaultHelper): posted now, or when
   * that thread starts (the start's load begins before the threads). False while stopping.
   */
  prefault(buffer: SharedArrayBuffer, stop: Int32Array): boolean {
    if (this.stopping) return false;
    const m: ToThread = { kind: 'prefault', buffer, stop: stop.buffer as SharedArrayBuffer };
    const first = this.slots[0];
    if (first !== undefined) first.worker.postMessage(m);
    else this.pendingPrefault = m;
    return true;
  }

  /** Shares a newly loaded version with every thread; resolves once each has swapped it in. */
  async loaded(organizationId: string, version: number, built: BuiltIndex): Promise<void> {
    // A loaded index comes packed (store/packed-flat.ts); one built on this thread (tests'
    // builder) has no shared sections yet: they are made once, with the dictionaries' lookup
    // sections (made here rather than by every thread). Only the sections travel: the contact
    // records (for tools, never a request) would be cloned into every thread on each post.
    let flat = built.packed ?? null;
    if (flat === null) {
      const full = built.flat ?? flattenIndex(built.index);
      deriveDictionaries(full);
      // (shareFlat's copy has every section shared, so it packs)
      flat = packFlat(full) ?? packFlat(shareFlat(full))!;
    }
    this.flats.set(organizationId, { version, flat });
    const seq = ++this.seq;
    for (const s of this.slots)
      s.worker.postMessage({ kind: 'index', seq, organizationId, version, flat } satisfies ToThread);
    // Before the ready state, no thread answers a search, and a thread applies its messages in
    // the order sent: the ready state's ack (postState) comes after every index's. Waiting here
    // for each organization's acks cost a round trip to every thread an organization (2,000
    // organizations, two threads: ~0.5 s of a 1.8 s start).
    if (!this.lastState.ready) return;
    await this.ackedOrLate(seq, `organization ${organizationId} version ${version}`);
    await this.postState();
  }

  /** Posts the catalog's state to every thread and waits for them to apply it. */
  async postState(): Promise<void> {
    const state = this.deps.state();
    const seq = ++this.seq;
    this.lastState = state;
    for (const s of this.slots) s.worker.postMessage({ kind: 'state', seq, state } satisfies ToThread);
    await this.ackedOrLate(seq, 'the serving state');
    this.syncedReady = state.ready;
  }

  /**
   * A key listing the main thread's cache read: every thread gets it on its key channel, then the
   * shared generation moves, so a thread that authenticates after that installs it first (read
   * synchronously off its channel). A revocation one thread answers is then answered by all.
   */
  listing(listing: KeyListing): void {
    const message: KeyListingMessage = { generation: this.keyGeneration[0] + 1, listing };
    this.listingMessage = message;
    for (const s of this.slots) {
      try {
        s.keysPort.postMessage(message);
      } catch {
        /* the thread is gone; its replacement gets listingMessage */
      }
    }
    Atomics.store(this.keyGeneration, 0, message.generation);
  }

  /**
   * Every thread sends its response counts now; resolves once all have (a /metrics scrape), or
   * after FLUSH_WAIT_MS when a thread is dying and cannot answer.
   */
  async flushObserved(): Promise<void> {
    const seq = ++this.seq;
    for (const s of this.slots) s.worker.postMessage({ kind: 'flush', seq } satisfies ToThread);
    await within(this.acked(seq), FLUSH_WAIT_MS, () => undefined);
  }

  /** A test hook: makes thread `i` throw an uncaught exception. */
  fault(i: number): void {
    this.slots[i]?.worker.postMessage({ kind: 'fault' } satisfies ToThread);
  }

  /** During stop(): every thread stops waiting for its responses in flight (a second signal). */
  hurry(): void {
    for (const s of this.slots) s.worker.postMessage({ kind: 'hurry' } satisfies ToThread);
    for (const w of this.dying.keys()) w.postMessage({ kind: 'hurry' } satisfies ToThread);
  }

  /** Closes every listener, waits (bounded) for each thread's responses in flight, then ends them. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    // A stopped thread acknowledges nothing more: a load that waits to be swapped in by every
    // thread (a reload, or the poll, during the drain) would wait for ever, and the catalog's
    // stop with it (the process hung after SIGTERM during a reload, with 2 or more threads).
    // The process is going: nothing waits for the threads any longer.
    for (const w of this.waiters.splice(0)) w.resolve();
    const stopOne = (worker: Worker): Promise<boolean> =>
      new Promise<boolean>((resolve) => {
        worker.on('message', (m: FromThread) => {
          if (m.kind === 'stopped') resolve(m.drained);
        });
        worker.once('exit', () => resolve(false));
        worker.postMessage({ kind: 'stop', timeoutMs } satisfies ToThread);
        setTimeout(() => resolve(false), timeoutMs + 1000).unref();
      });
    const results = await Promise.all([
      ...this.slots.map((s) => {
        s.stopping = true;
        // a thread that has ended has nothing in flight (its 'exit' would never come again)
        return s.exited ? Promise.resolve(true) : stopOne(s.worker);
      }),
      // a crashed thread that ended during the wait said whether its answers finished first
      ...[...this.dying].map(([worker, slot]) => stopOne(worker).then((drained) => drained || slot.drained === true)),
    ]);
    for (const s of this.slots) s.keysPort.close();
    // No worker.terminate(): tearing down a thread whose uWS loop still has connections (an idle
    // keep-alive one) aborts the process; the caller's process.exit ends them all at once.
    return results.every(Boolean);
  }

  /**
   * acked, given up after ACK_WAIT_MS with a warning naming the threads behind: a thread that
   * never answered (hung in a request) held the catalog's one queue, and every later reload and
   * check with it. It is not stopped (a thread ending while uWS holds connections aborts the
   * process); it applies what was posted, in order, if it runs again.
   */
  private ackedOrLate(seq: number, what: string): Promise<void> {
    return within(this.acked(seq), ACK_WAIT_MS, () => this.judgeLate(seq, what)).then(() => undefined);
  }

  /**
   * After the next poll phase (acks already queued are taken in first: a main thread blocked for
   * the whole wait would otherwise mark threads that had answered), marks the threads still
   * behind `seq`.
   */
  private judgeLate(seq: number, what: string): Promise<void> {
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      const late = this.slots.filter((s) => !s.exited && !s.behind && s.acked < seq);
      for (const s of late) {
        s.behind = true;
        s.behindSeq = seq;
      }
      this.wake();
      if (late.length > 0)
        this.deps.logger.error(
          { threads: late.map((s) => s.name), waited_ms: ACK_WAIT_MS },
          `serving threads have not taken ${what}; going on without them until they answer again (hung in a request?)`,
        );
    });
  }

  /** Resolves once every live thread acknowledged `seq` (a thread that dies is replaced with everything). */
  private acked(seq: number): Promise<void> {
    // a stopping pool's threads may acknowledge nothing more (see stop); an ended thread never will
    if (this.stopping || this.slots.every((s) => s.exited || s.behind || s.acked >= seq)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  private wake(): void {
    let min = Number.POSITIVE_INFINITY;
    for (const s of this.slots) if (!s.exited && !s.behind && s.acked < min) min = s.acked;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i].seq <= min) this.waiters.splice(i, 1)[0].resolve();
    }
  }

  private spawn(i: number): Promise<void> {
    const name = `serving-${i}`;
    const keys = new MessageChannel();
    const worker = startModuleWorker(import.meta.url, 'serving-thread', {
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: SERVING_YOUNG_GENERATION_MB },
      name,
      env: { ...process.env, SERVING_THREAD_NAME: name },
      workerData: {
        config: this.deps.config,
        rateLimit: this.deps.rateLimit,
        keyLookups: this.deps.keyLookups,
        keysPort: keys.port2,
        keyGeneration: this.keyGeneration.buffer as SharedArrayBuffer,
        slowClientHeld: this.deps.slowClientHeld,
        faultHook: this.deps.faultHook === true,
      } satisfies ServingThreadData,
      transferList: [keys.port2],
    });
    // The newest key listing is waiting for the thread when it starts.
    if (this.listingMessage !== null) keys.port1.postMessage(this.listingMessage);
    // A new thread starts with the current seq: everything posted before is re-sent below.
    const slot: Slot = {
      name,
      worker,
      keysPort: keys.port1,
      acked: this.seq,
      keysReady: false,
      listening: false,
      stopping: false,
      replaced: false,
      exited: false,
      drained: null,
      behind: false,
      behindSeq: 0,
    };
    this.slots[i] = slot;
    for (const [organizationId, { version, flat }] of this.flats) {
      worker.postMessage({ kind: 'index', seq: this.seq, organizationId, version, flat } satisfies ToThread);
    }
    worker.postMessage({ kind: 'state', seq: this.seq, state: this.lastState } satisfies ToThread);
    if (i === 0 && this.pendingPrefault !== null) {
      worker.postMessage(this.pendingPrefault);
      this.pendingPrefault = null;
    }
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromThread) => {
        switch (m.kind) {
          case 'listening':
            slot.listening = true;
            resolve();
            break;
          case 'listen-failed':
            // it will never serve: nothing waits for it, and it is stopped (it holds no
            // connection, so it can be ended once its app is closed)
            slot.exited = true;
            this.wake();
            worker.postMessage({ kind: 'stop', timeoutMs: 0 } satisfies ToThread);
            reject(new Error(m.message));
            break;
          case 'ack':
            slot.acked = Math.max(slot.acked, m.seq);
            if (slot.behind && slot.acked >= slot.behindSeq) {
              slot.behind = false;
              this.deps.logger.warn(
                { thread: slot.name },
                'serving thread answers again (it applies what was posted meanwhile, in order)',
              );
            }
            slot.keysReady = m.keysReady;
            this.wake();
            break;
          case 'store':
            this.storeCall(worker, m.id, m.method, m.args);
            break;
          case 'observed':
            for (let k = 0; k + 1 < m.pairs.length; k += 2)
              this.deps.metrics.record('public', m.pairs[k], m.pairs[k + 1]);
            break;
          case 'stopped':
            // (also from a crashed thread about to exit: whether it finished its answers)
            slot.drained = m.drained;
            if (slot.exited) void worker.terminate();
            break;
          case 'crashed':
            this.deps.logger.error(
              { thread: name, err: { message: m.message, stack: m.stack } },
              'serving thread: uncaught exception; it closed its listener and exits once its connections are gone',
            );
            this.replace(i, slot, 'crashed');
            break;
        }
      });
      worker.on('error', (err) => this.deps.logger.error({ err, thread: name }, 'serving thread failed'));
      worker.on('exit', (code) => {
        slot.exited = true;
        slot.keysPort.close();
        this.dying.delete(worker);
        this.wake();
        if (!slot.listening) reject(new Error(`serving thread ${name} exited with code ${code} before listening`));
        this.replace(i, slot, `exited with code ${code}`);
      });
    });
  }

  /** Starts a new thread in slot i, once per failed thread (it reports a crash, then exits later). */
  private replace(i: number, slot: Slot, why: string): void {
    if (slot.replaced || this.stopping || slot.stopping || !slot.listening || this.slots[i] !== slot) return;
    slot.replaced = true;
    slot.keysPort.close();
    if (!slot.exited) this.dying.set(slot.worker, slot);
    this.deps.logger.error({ thread: slot.name, why }, 'serving thread failed; replacing it');
    this.respawn(i, slot.name, Date.now(), 0);
  }

  /**
   * spawn(i) for a replacement, tried again with backoff while it fails (a thread that cannot
   * start, e.g. EMFILE, or cannot listen): the slot's dead thread is left out of acks and
   * readiness meanwhile, so reloads and /readyz do not wait for it for ever (a review).
   */
  private respawn(i: number, name: string, started: number, attempt: number): void {
    this.spawn(i).then(
      () => {
        this.wake();
        this.deps.logger.info({ thread: name, ms: Date.now() - started }, 'serving thread replaced');
      },
      (err: Error) => {
        if (this.stopping) return;
        const delayMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** attempt);
        this.deps.logger.error(
          { err: err.message, thread: name, retry_in_ms: delayMs },
          'serving thread could not be replaced; trying again',
        );
        setTimeout(() => {
          if (!this.stopping) this.respawn(i, name, started, attempt + 1);
        }, delayMs).unref();
      },
    );
  }

  /** A thread's lookup of a key prefix: the store's record, once every thread can see what it means. */
  private async lookup(prefix: string): Promise<KeyRecord | null> {
    const startedAt = Date.now();
    const record = await this.deps.keys.getKey(prefix, { lastUses: false });
    await this.deps.afterLookup?.(prefix, record, startedAt);
    return record;
  }

  private storeCall(worker: Worker, id: number, method: 'getKey' | 'touchKeys', args: unknown[]): void {
    const store = this.deps.keys;
    const later = this.stopping && method === 'touchKeys' ? this.deps.laterUses : undefined;
    if (later) later(args[0] as Map<string, string>);
    const run: Promise<unknown> = later
      ? Promise.resolve()
      : method === 'getKey'
        ? this.lookup(args[0] as string)
        : store.touchKeys(args[0] as Map<string, string>);
    run.then(
      (value) => post({ kind: 'store-reply', id, ok: true, value }),
      (err: unknown) => post({ kind: 'store-reply', id, ok: false, message: (err as Error)?.message ?? String(err) }),
    );
    function post(m: ToThread): void {
      try {
        worker.postMessage(m);
      } catch {
        /* the thread is gone */
      }
    }
  }
}
