/**
 * The server's view of the store: one immutable OrgIndex per organization, swapped whole.
 *
 * Loading: start() loads the newest snapshot of every organization; reload() loads newer ones.
 * Each new index replaces the old one with a single Map.set, so a request that already fetched
 * an index finishes on it while new requests see the new one. Loads run one at a time (a queue),
 * so a reload that returns has seen everything published before it began.
 *
 * Cross-process reload: the Catalog registers its server in the store (heartbeat every second,
 * entry expiring after a few), answers broadcast reload requests when the store has a signal
 * channel (Redis), and polls `latest()` every second as the fallback for lost broadcasts.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import type { OrgIndex } from '../index/build.js';
import type { OrgData } from '../model/records.js';
import type { ReloadAck, ReloadRequest, ServerEntry, SnapshotRef, Store } from '../store/store.js';
import { IndexBuilder } from './index-builder.js';

/** The subset of a pino logger the Catalog uses. */
export interface CatalogLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface CatalogOptions {
  logger: CatalogLogger;
  /** base URL of this server's admin listener, registered for `npm run reload` (embedded store) */
  adminUrl?: string | null;
  /** version check period in ms (default 1000) */
  pollMs?: number;
  /** registry heartbeat period in ms (default 1000); the entry expires after 5 periods */
  heartbeatMs?: number;
  /** index builder, replaceable in tests; when given it runs on the main thread (default: buildIndex in a worker thread) */
  build?: (data: OrgData) => OrgIndex;
  /** 'main' builds on the request thread (a diagnostic, for comparisons); default 'worker' */
  buildThread?: 'worker' | 'main';
}

/** What one reload did; JSON-able, the body of `POST /admin/reload`. */
export interface ReloadSummary {
  reloaded: { organization_id: string; version: number; messages: number; contacts: number }[];
  unchanged: number;
  failed: { organization_id: string; version: number; error: string }[];
}

/** For /metrics. */
export interface CatalogStats {
  ready: boolean;
  organizations: { organization_id: string; version: number; messages: number; contacts: number; loaded_at: string }[];
  loads: { ok: number; failed: number };
  /** duration of the last reload that loaded or failed something, in seconds, or null */
  lastReloadSeconds: number | null;
}

interface Loaded {
  index: OrgIndex;
  version: number;
  messages: number;
  contacts: number;
  loadedAt: Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Answers to broadcast requests are kept this long, so a re-sent request gets the same answer.
const ANSWERED_MAX = 100;

/** Loads, holds and reloads every organization's index. */
export class Catalog {
  ready = false;
  readonly serverId: string;
  private readonly store: Store;
  private readonly log: CatalogLogger;
  private readonly opts: Required<Omit<CatalogOptions, 'logger' | 'adminUrl' | 'build'>> & { adminUrl: string | null };
  private readonly builder: IndexBuilder;
  // Loaded organizations the store no longer lists (Redis restarted empty): warned about once.
  private readonly missingInStore = new Set<string>();
  private readonly indexes = new Map<string, Loaded>();
  // Versions that failed to load: the poll does not retry them every second (an explicit reload does).
  private readonly failedVersions = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();
  private pollQueued = false;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => Promise<void>) | null = null;
  private readonly answered = new Map<string, Promise<ReloadAck>>();
  private loadsOk = 0;
  private loadsFailed = 0;
  private lastReloadSeconds: number | null = null;
  private storeDown = false;
  private readonly startedAt = new Date().toISOString();
  private stopped = false;

  constructor(store: Store, options: CatalogOptions) {
    this.store = store;
    this.log = options.logger;
    this.opts = {
      adminUrl: options.adminUrl ?? null,
      pollMs: options.pollMs ?? 1000,
      heartbeatMs: options.heartbeatMs ?? 1000,
      buildThread: options.buildThread ?? 'worker',
    };
    const env = options.buildThread === 'main' ? null : store.reopenEnv?.() ?? null;
    this.builder = new IndexBuilder(store, env, this.log, options.build);
    this.serverId = `${hostname().replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32)}-${process.pid}-${randomBytes(4).toString('hex')}`;
  }

  /** Loads every organization's newest snapshot, then joins the reload protocol; `ready` is true after. */
  async start(): Promise<void> {
    const summary = await this.enqueue(() => this.load(null, true));
    this.ready = true;
    this.builder.serving = true;
    this.log.info({ organizations: this.indexes.size, failed: summary.failed.length, seconds: this.lastReloadSeconds }, 'catalog: snapshots loaded');
    if (this.store.signals) {
      this.unsubscribe = await this.store.signals.subscribe((req) => this.onRequest(req), () => this.poll());
    }
    // Registered only once subscribed: a reload CLI that sees this server can reach it.
    await this.heartbeat();
    this.timers.push(setInterval(() => void this.heartbeat(), this.opts.heartbeatMs).unref());
    this.timers.push(setInterval(() => this.poll(), this.opts.pollMs).unref());
  }

  /** The index of `orgId`, or null when the organization has no snapshot loaded. Synchronous: the request path. */
  get(orgId: string): OrgIndex | null {
    return this.indexes.get(orgId)?.index ?? null;
  }

  /** Loads newer snapshots of every organization, or of `orgId` only. Rejects when the store cannot be read. */
  reload(orgId?: string | null): Promise<ReloadSummary> {
    return this.enqueue(() => this.load(orgId ? orgId.toLowerCase() : null, true));
  }

  stats(): CatalogStats {
    return {
      ready: this.ready,
      organizations: [...this.indexes].map(([id, l]) => ({
        organization_id: id, version: l.version, messages: l.messages, contacts: l.contacts, loaded_at: l.loadedAt.toISOString(),
      })),
      loads: { ok: this.loadsOk, failed: this.loadsFailed },
      lastReloadSeconds: this.lastReloadSeconds,
    };
  }

  /** Stops timers and subscriptions and leaves the registry; indexes stay readable. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.unsubscribe?.().catch(() => {});
    this.unsubscribe = null;
    await this.store.unregisterServer(this.serverId).catch(() => {});
    await this.queue.catch(() => {});
    await this.builder.close();
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  private async load(orgId: string | null, retryFailed: boolean): Promise<ReloadSummary> {
    const t0 = performance.now();
    let refs: SnapshotRef[] = await this.store.latest();
    if (orgId === null) this.noteMissing(refs);
    else refs = refs.filter((r) => r.organizationId === orgId);
    const summary: ReloadSummary = { reloaded: [], unchanged: 0, failed: [] };
    for (const ref of refs) {
      const org = ref.organizationId;
      const cur = this.indexes.get(org);
      // !== rather than <: a store that lost its data (Redis restarted without persistence)
      // numbers versions from 1 again, and the store's newest is what must be served.
      if ((cur && cur.version === ref.version) || (!retryFailed && this.failedVersions.get(org) === ref.version)) {
        summary.unchanged++;
        continue;
      }
      try {
        const t1 = performance.now();
        const { index, messages, contacts } = await this.builder.load(ref);
        // One Map.set: requests already holding the old index finish on it, later ones see this.
        this.indexes.set(org, { index, version: ref.version, messages, contacts, loadedAt: new Date() });
        // The replaced index's shared memory is given back by a collection soon after.
        if (cur) this.builder.released();
        this.failedVersions.delete(org);
        this.loadsOk++;
        summary.reloaded.push({ organization_id: org, version: ref.version, messages, contacts });
        const seconds = Math.round(performance.now() - t1) / 1000;
        this.log.info({ organization_id: org, version: ref.version, messages, seconds, builder: this.builder.mode }, 'catalog: snapshot loaded');
      } catch (err) {
        const error = (err as Error).message ?? String(err);
        this.failedVersions.set(org, ref.version);
        this.loadsFailed++;
        summary.failed.push({ organization_id: org, version: ref.version, error });
        this.log.error({ organization_id: org, version: ref.version, err: error }, 'catalog: snapshot refused, keeping the loaded one');
      }
      // Loading is CPU-heavy; let requests in between organizations.
      await yieldToRequests();
    }
    if (summary.reloaded.length > 0 || summary.failed.length > 0) this.lastReloadSeconds = (performance.now() - t0) / 1000;
    return summary;
  }

  // A loaded organization missing from the store's list (a Redis restarted without its data, a
  // deleted folder) keeps being served from memory; say so once, not every second.
  private noteMissing(refs: SnapshotRef[]): void {
    const listed = new Set(refs.map((r) => r.organizationId));
    for (const [org, l] of this.indexes) {
      if (listed.has(org)) { this.missingInStore.delete(org); continue; }
      if (this.missingInStore.has(org)) continue;
      this.missingInStore.add(org);
      this.log.warn({ organization_id: org, version: l.version }, 'catalog: the store has no snapshot of this organization any more; keeping the loaded index');
    }
  }

  // The fallback for lost broadcasts and for imports without a reload; at most one queued at a time.
  private poll(): void {
    if (this.pollQueued || this.stopped || !this.ready) return;
    this.pollQueued = true;
    this.enqueue(async () => {
      this.pollQueued = false;
      return this.load(null, false);
    }).then(() => this.storeState(null), (err) => this.storeState(err as Error));
  }

  // Logs store outages once when they begin and once when they end, not every second.
  private storeState(err: Error | null): void {
    if (err && !this.storeDown) this.log.warn({ err: err.message }, 'catalog: store unavailable, serving from memory');
    if (!err && this.storeDown) this.log.info({}, 'catalog: store available again');
    this.storeDown = err !== null;
  }

  private async heartbeat(): Promise<void> {
    const entry: ServerEntry = {
      id: this.serverId, pid: process.pid, hostname: hostname(), adminUrl: this.opts.adminUrl,
      startedAt: this.startedAt, heartbeatAt: Date.now(),
    };
    try {
      await this.store.registerServer(entry, this.opts.heartbeatMs * 5);
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'catalog: heartbeat failed');
    }
  }

  private onRequest(req: ReloadRequest): void {
    const signals = this.store.signals;
    if (!signals || this.stopped) return;
    let answer = this.answered.get(req.requestId);
    if (answer === undefined) {
      const org = req.organizationId && UUID.test(req.organizationId.toLowerCase()) ? req.organizationId : null;
      answer = this.reload(org).then(
        (summary): ReloadAck => ({ ok: true, summary }),
        (err): ReloadAck => ({ ok: false, error: (err as Error).message ?? String(err) }),
      );
      this.answered.set(req.requestId, answer);
      if (this.answered.size > ANSWERED_MAX) this.answered.delete(this.answered.keys().next().value!);
    }
    answer
      .then((ack) => signals.putAck(req.requestId, this.serverId, ack))
      .catch((err) => this.log.warn({ err: (err as Error).message, request_id: req.requestId }, 'catalog: could not acknowledge reload'));
  }
}
