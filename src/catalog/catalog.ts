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
 * channel (Redis), and polls `listLatest()` every second as the fallback for lost broadcasts.
 *
 * Failures stay with their organization (issue 13): an organization whose pointer or snapshot
 * cannot be read or verified is recorded as failed, with the reason, and retried with backoff;
 * the others load and serve, and an older version already in memory keeps serving. A store that
 * cannot be read at all (down at start) is retried by the same once-a-second check, which runs
 * before `ready` too; `ready` turns true once every organization listed has been tried.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import type { OrgIndex } from '../index/build.js';
import type { OrgData } from '../model/records.js';
import { sweepIdle } from '../store/flat-index.js';
import type { ReloadAck, ReloadRequest, ServerEntry } from '../store/fleet.js';
import { FULL_LISTING_MS, type StoreConfig, type Stores } from '../store/stores.js';
import { type BuiltIndex, IndexBuilder } from './index-builder.js';
import { parseOrganizationId } from '../model/organization-id.js';
import { pidNamespace } from '../store/file-utils.js';
import { within } from '../runtime/within.js';

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
  /** the store the build worker opens (the same as `stores`); absent: indexes are built on the main thread */
  storeConfig?: StoreConfig | null;
  /** the organizations of this replica's shard (ORGANIZATIONS), or null for all; others are never loaded */
  organizations?: ReadonlySet<string> | null;
  /** Called (and awaited) after a new version is swapped in, before the reload counts it: serving threads swap it too. */
  onLoaded?: (organizationId: string, version: number, built: BuiltIndex) => Promise<void>;
  /** Called once, when every organization listed at start has been tried (ready). */
  onReady?: () => void;
  /**
   * Called (and awaited) after a reload that left an organization with nothing to serve (its
   * first version refused): serving threads learn that it answers 503 before the reload answers.
   */
  onUnavailable?: () => Promise<void>;
}

/** What one reload did; JSON-able, the body of `POST /admin/reload`. */
export interface ReloadSummary {
  reloaded: { organization_id: string; version: number; messages: number; contacts: number }[];
  unchanged: number;
  /** version null: the organization's pointer itself could not be read */
  failed: { organization_id: string; version: number | null; error: string }[];
}

/** An organization whose last load attempt failed, as /readyz and the metrics report it. */
export interface OrgFailure {
  organization_id: string;
  /** the version that failed, or null when the pointer could not be read */
  version: number | null;
  error: string;
  /** first failure of this episode (ISO) */
  since: string;
  attempts: number;
  /** the older version still served from memory, or null (then searches answer 503) */
  serving_version: number | null;
  /** when the next automatic attempt is due (ISO) */
  next_attempt_at: string;
}

/** For /metrics. */
export interface CatalogStats {
  ready: boolean;
  organizations: { organization_id: string; version: number; messages: number; contacts: number; loaded_at: string }[];
  loads: { ok: number; failed: number };
  /** loads by organization and result, since start */
  loadsByOrganization: { organization_id: string; ok: number; failed: number }[];
  failures: OrgFailure[];
  /** duration of the last reload that loaded or failed something, in seconds, or null */
  lastReloadSeconds: number | null;
}

interface Loaded {
  /** the listing's stamp of the version loaded (SnapshotRef.stamp), when the store gives one */
  stamp?: string;
  /** what the builder loaded: kept so that a reload of the same content keeps it (IndexBuilder.load) */
  built: BuiltIndex;
  version: number;
  messages: number;
  contacts: number;
  loadedAt: Date;
}

interface Failure {
  version: number | null;
  error: string;
  since: Date;
  attempts: number;
  /** epoch ms; the poll does not retry before (an explicit reload does) */
  nextAttemptAt: number;
}

// Retry backoff of a failed organization: 1 s, 2 s, 4 s ... at most 30 s.
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
// Answers to broadcast requests are kept this long, so a re-sent request gets the same answer.
const ANSWERED_MAX = 100;

/** Loads, holds and reloads every organization's index. */
export class Catalog {
  ready = false;
  readonly serverId: string;
  private readonly store: Pick<Stores, 'snapshots' | 'fleet' | 'currentRedisUrl'>;
  private readonly log: CatalogLogger;
  private readonly opts: Required<
    Omit<
      CatalogOptions,
      'logger' | 'adminUrl' | 'build' | 'organizations' | 'onLoaded' | 'onReady' | 'onUnavailable' | 'storeConfig'
    >
  > & { adminUrl: string | null };
  private readonly shard: ReadonlySet<string> | null;
  private readonly builder: IndexBuilder;
  // Loaded organizations the store no longer lists (Redis restarted empty): warned about once.
  private readonly missingInStore = new Set<string>();
  private readonly indexes = new Map<string, Loaded>();
  // Organizations whose last attempt failed: retried with backoff by the poll, at once by a reload.
  private readonly failures = new Map<string, Failure>();
  private readonly loadsByOrg = new Map<string, { ok: number; failed: number }>();
  private queue: Promise<unknown> = Promise.resolve();
  private pollQueued = false;
  private timers: NodeJS.Timeout[] = [];
  /** Set by leave: the heartbeat registers this server no more. */
  private leaving = false;
  private unsubscribe: (() => Promise<void>) | null = null;
  private readonly answered = new Map<string, Promise<ReloadAck>>();
  private loadsOk = 0;
  private loadsFailed = 0;
  private lastReloadSeconds: number | null = null;
  private storeDown = false;
  private readonly startedAt = new Date().toISOString();
  private stopped = false;

  private readonly onLoaded: CatalogOptions['onLoaded'];
  private readonly onReady: CatalogOptions['onReady'];
  private readonly onUnavailable: CatalogOptions['onUnavailable'];

  constructor(store: Pick<Stores, 'snapshots' | 'fleet' | 'currentRedisUrl'>, options: CatalogOptions) {
    this.store = store;
    this.onLoaded = options.onLoaded;
    this.onReady = options.onReady;
    this.onUnavailable = options.onUnavailable;
    this.log = options.logger;
    this.opts = {
      adminUrl: options.adminUrl ?? null,
      pollMs: options.pollMs ?? 1000,
      heartbeatMs: options.heartbeatMs ?? 1000,
      buildThread: options.buildThread ?? 'worker',
    };
    this.shard = options.organizations ?? null;
    const storeConfig = options.buildThread === 'main' ? null : (options.storeConfig ?? null);
    // the worker is started again for each reload pass: on a cluster it connects through every
    // node known by then, not only REDIS_URL's (one seed down kept it out for good)
    const workerStore =
      storeConfig === null
        ? null
        : () => ({ ...storeConfig, redisUrl: store.currentRedisUrl?.() ?? storeConfig.redisUrl });
    this.builder = new IndexBuilder(store.snapshots, workerStore, this.log, options.build);
    this.serverId = `${hostname()
      .replace(/[^A-Za-z0-9_-]/g, '_')
      .slice(0, 32)}-${process.pid}-${randomBytes(4).toString('hex')}`;
  }

  /**
   * Joins the reload protocol and tries every organization's newest snapshot once; `ready` is
   * true after, whatever failed. Never rejects: a store that cannot be read is retried by the
   * once-a-second check (which runs before `ready` too) until it answers.
   */
  async start(): Promise<void> {
    // The check runs from the start: it is what retries a store that is down now.
    this.timers.push(setInterval(() => this.poll(), this.opts.pollMs).unref());
    // With SERVER_THREADS=1 this thread searches: an organization no request reached for a while
    // lets its wrapped index go (LazyIndex.dropIfIdle; with serving threads none is ever wrapped here)
    this.timers.push(sweepIdle(() => Array.from(this.indexes.values(), (loaded) => loaded.built)));
    // Joining does not wait for the load: `npm run reload` must see a server that is still loading.
    const joined = this.join();
    try {
      // The start's listing counts as the checks': the first of them, queued behind it, listed
      // every pointer again right at ready (2,000 organizations: its garbage held RSS 5 MiB
      // higher for the next ~20 s). A token that cannot be read does not stop the start's load.
      const summary = await this.enqueue(async () => this.loadAll(await this.changeToken().catch(() => null), true));
      this.storeState(null);
      this.log.info(
        { organizations: this.indexes.size, failed: summary.failed.length, seconds: this.lastReloadSeconds },
        'catalog: snapshots loaded',
      );
    } catch (err) {
      this.storeState(err as Error);
    }
    // Cold start read snapshots on this thread (fastest); from now on loads go through the worker.
    this.builder.serving = true;
    // In tests with a live store, start() resolving means joined too (the CLI can reach it).
    await within(joined, this.opts.heartbeatMs, () => undefined);
  }

  /** Subscribes to reload broadcasts (retrying while the store is down), then starts the heartbeat. */
  private async join(): Promise<void> {
    while (!this.stopped && this.store.fleet.signals && !this.unsubscribe) {
      try {
        // On a reconnection: registered again at once (a reload CLI lists only registered
        // servers, and the entry may have expired during the outage), and the newest snapshots
        // checked for (a broadcast may have been missed).
        this.unsubscribe = await this.store.fleet.signals.subscribe(
          (req) => this.onRequest(req),
          () => {
            void this.heartbeat();
            this.poll();
          },
        );
      } catch (err) {
        this.log.debug({ err: (err as Error).message }, 'catalog: cannot subscribe to reload requests yet; retrying');
        // every poll period: a server that started while the store was down joins soon after it
        // answers (a backoff up to 5 periods left it serving unregistered for seconds)
        await new Promise((r) => setTimeout(r, this.opts.pollMs).unref());
      }
    }
    if (this.stopped) {
      await this.unsubscribe?.().catch(() => {});
      return;
    }
    // Registered only once subscribed: a reload CLI that sees this server can reach it.
    await this.heartbeat();
    if (!this.stopped) this.timers.push(setInterval(() => void this.heartbeat(), this.opts.heartbeatMs).unref());
  }

  /** The index of `orgId`, or null when the organization has no snapshot loaded. Synchronous: the request path. */
  get(orgId: string): OrgIndex | null {
    return this.indexes.get(orgId)?.built.index ?? null;
  }

  /**
   * Why `orgId` cannot be served, or null: its last load failed and no older version is in
   * memory. `retryAfterSeconds` is the wait until the next attempt (at least 1). Synchronous.
   */
  unavailable(orgId: string): { retryAfterSeconds: number } | null {
    if (this.indexes.has(orgId)) return null;
    const f = this.failures.get(orgId);
    if (f === undefined) return null;
    return { retryAfterSeconds: Math.max(1, Math.ceil((f.nextAttemptAt - Date.now()) / 1000)) };
  }

  /** Organizations whose last load failed, for /readyz. */
  failed(): OrgFailure[] {
    return [...this.failures]
      .map(([org, f]) => ({
        organization_id: org,
        version: f.version,
        error: f.error,
        since: f.since.toISOString(),
        attempts: f.attempts,
        serving_version: this.indexes.get(org)?.version ?? null,
        next_attempt_at: new Date(f.nextAttemptAt).toISOString(),
      }))
      .sort((a, b) => (a.organization_id < b.organization_id ? -1 : 1));
  }

  /** Whether this replica serves `orgId` (lower case): always, unless ORGANIZATIONS names a shard without it. */
  holds(orgId: string): boolean {
    return this.shard === null || this.shard.has(orgId);
  }

  /** Loads newer snapshots of every organization, or of `orgId` only. Rejects when the store cannot be read. */
  reload(orgId?: string | null): Promise<ReloadSummary> {
    return this.enqueue(() => this.load(orgId ? orgId.toLowerCase() : null, true));
  }

  stats(): CatalogStats {
    return {
      ready: this.ready,
      organizations: [...this.indexes].map(([id, l]) => ({
        organization_id: id,
        version: l.version,
        messages: l.messages,
        contacts: l.contacts,
        loaded_at: l.loadedAt.toISOString(),
      })),
      loads: { ok: this.loadsOk, failed: this.loadsFailed },
      loadsByOrganization: [...this.loadsByOrg].map(([id, n]) => ({ organization_id: id, ok: n.ok, failed: n.failed })),
      failures: this.failed(),
      lastReloadSeconds: this.lastReloadSeconds,
    };
  }

  /** The catalog-wide load counts of stats(), without its per-organization lists (read at every scrape). */
  loadTotals(): { ok: number; failed: number; lastReloadSeconds: number | null } {
    return { ok: this.loadsOk, failed: this.loadsFailed, lastReloadSeconds: this.lastReloadSeconds };
  }

  /** Stops timers and subscriptions and leaves the registry; indexes stay readable. */
  /**
   * Leaves the fleet registry now, as the shutdown begins: a reload CLI that listed this server
   * while its admin listener was closed for the drain got "connection refused" and exited 1 (a
   * review), though a server that stops is not a failure. Loads and reload answers go on.
   */
  async leave(): Promise<void> {
    // (on Redis a draining server still acknowledges reload broadcasts: it stays listed, so that a
    // reload waits for it)
    if (this.store.fleet.signals) return;
    this.leaving = true;
    await this.store.fleet.unregisterServer(this.serverId).catch(() => {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.leaving = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.unsubscribe?.().catch(() => {});
    this.unsubscribe = null;
    await this.store.fleet.unregisterServer(this.serverId).catch(() => {});
    await this.queue.catch(() => {});
    await this.builder.close();
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * One pass over the store's listing. `explicit` (start, admin reload, broadcast) retries failed
   * organizations at once; the poll waits for their backoff. Only the listing itself can reject.
   */
  private async load(orgId: string | null, explicit: boolean): Promise<ReloadSummary> {
    try {
      return await this.loadListed(orgId, explicit);
    } finally {
      // one build worker serves the whole pass, then goes
      this.builder.idle();
    }
  }

  private async loadListed(orgId: string | null, explicit: boolean): Promise<ReloadSummary> {
    const t0 = performance.now();
    let { refs, unreadable } = await this.store.snapshots.listLatest();
    // A sharded replica never loads another shard's organizations (nor warns about them).
    if (this.shard !== null) {
      const shard = this.shard;
      refs = refs.filter((r) => shard.has(r.organizationId));
      unreadable = unreadable.filter((u) => shard.has(u.organizationId));
    }
    if (orgId === null) {
      const listed = [...refs.map((r) => r.organizationId), ...unreadable.map((u) => u.organizationId)];
      this.noteMissing(listed);
      this.forgetUnlisted(new Set(listed));
    } else {
      refs = refs.filter((r) => r.organizationId === orgId);
      unreadable = unreadable.filter((u) => u.organizationId === orgId);
    }
    const summary: ReloadSummary = { reloaded: [], unchanged: 0, failed: [] };
    for (const u of unreadable) {
      const f = this.failures.get(u.organizationId);
      if (!explicit && f && f.version === null && Date.now() < f.nextAttemptAt) continue;
      this.fail(u.organizationId, null, u.error, summary);
    }
    for (const ref of refs) {
      const org = ref.organizationId;
      const cur = this.indexes.get(org);
      const f = this.failures.get(org);
      // !== rather than <: a store that lost its data (Redis restarted without persistence)
      // numbers versions from 1 again, and the store's newest is what must be served.
      // and the same publish of it: an embedded organization folder removed and made anew numbers
      // from 1 again, and a server holding its old version 1 kept serving it (an audit)
      if (cur && cur.version === ref.version && cur.stamp === ref.stamp) {
        // A pointer that was unreadable and now names the version in memory: recovered.
        if (f) this.recovered(org, ref.version);
        summary.unchanged++;
        continue;
      }
      if (!explicit && f && f.version === ref.version && Date.now() < f.nextAttemptAt) {
        summary.unchanged++;
        continue;
      }
      try {
        const t1 = performance.now();
        const built = await this.builder.load(ref, cur?.built);
        const { messages, contacts } = built;
        // One Map.set: requests already holding the old index finish on it, later ones see this.
        this.indexes.set(org, {
          built,
          version: ref.version,
          ...(ref.stamp === undefined ? {} : { stamp: ref.stamp }),
          messages,
          contacts,
          loadedAt: new Date(),
        });
        // The replaced index's shared memory is given back by a collection soon after.
        if (cur && cur.built !== built) this.builder.released();
        try {
          await this.onLoaded?.(org, ref.version, built);
        } catch (err) {
          // not handed to the serving threads: the next check must not take it for unchanged
          if (cur) this.indexes.set(org, cur);
          else this.indexes.delete(org);
          throw err;
        }
        if (f) this.recovered(org, ref.version);
        this.count(org, 'ok');
        summary.reloaded.push({ organization_id: org, version: ref.version, messages, contacts });
        const seconds = Math.round(performance.now() - t1) / 1000;
        this.log.info(
          { organization_id: org, version: ref.version, messages, seconds, builder: this.builder.mode },
          'catalog: snapshot loaded',
        );
      } catch (err) {
        this.fail(org, ref.version, (err as Error).message ?? String(err), summary);
      }
      // Loading is CPU-heavy; let requests in between organizations.
      await yieldToRequests();
    }
    if (summary.reloaded.length > 0 || summary.failed.length > 0)
      this.lastReloadSeconds = (performance.now() - t0) / 1000;
    // (at the next periodic state post, up to 250 ms later, serving threads answered such an
    // organization 200 with no data meanwhile: a review)
    if (this.ready && summary.failed.some((f) => !this.indexes.has(f.organization_id))) await this.onUnavailable?.();
    // Every organization listed has now been tried: the start is over, whatever failed.
    if (orgId === null && !this.ready) {
      // (the start's garbage collected first, so that RSS at ready is the settled figure)
      await this.builder.started();
      this.ready = true;
      this.log.info(
        { organizations: this.indexes.size, failed: this.failures.size },
        'catalog: ready (every organization listed at start was tried)',
      );
      this.onReady?.();
    }
    return summary;
  }

  // Records a failed attempt and schedules the next one (backoff restarts for a new version).
  private fail(org: string, version: number | null, error: string, summary: ReloadSummary): void {
    const prev = this.failures.get(org);
    const same = prev !== undefined && prev.version === version;
    const attempts = same ? prev.attempts + 1 : 1;
    const wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(attempts - 1, 15));
    this.failures.set(org, {
      version,
      error,
      since: same ? prev.since : new Date(),
      attempts,
      nextAttemptAt: Date.now() + wait,
    });
    this.count(org, 'failed');
    summary.failed.push({ organization_id: org, version, error });
    const serving = this.indexes.get(org)?.version ?? null;
    const fields = {
      organization_id: org,
      version,
      err: error,
      attempts,
      serving_version: serving,
      retry_in_seconds: wait / 1000,
    };
    const msg =
      serving === null
        ? 'catalog: snapshot refused, organization unavailable until it loads'
        : 'catalog: snapshot refused, keeping the loaded one';
    // The first failure of an episode is an error; the retries of the same one, warnings.
    if (same && prev.error === error) this.log.warn(fields, msg);
    else this.log.error(fields, msg);
  }

  private recovered(org: string, version: number): void {
    const f = this.failures.get(org)!;
    this.failures.delete(org);
    this.cleared++;
    this.log.info(
      { organization_id: org, version, failed_since: f.since.toISOString(), attempts: f.attempts },
      'catalog: organization recovered',
    );
  }

  /**
   * Changes whenever stats() may have: every load counted, every failure cleared without a load
   * (forgotten, or recovered: a pointer naming the version in memory again), what the metrics'
   * per-organization series are rendered again for.
   */
  get statsVersion(): number {
    return this.loadsOk + this.loadsFailed + this.cleared;
  }
  private cleared = 0;

  private count(org: string, result: 'ok' | 'failed'): void {
    let n = this.loadsByOrg.get(org);
    if (n === undefined) this.loadsByOrg.set(org, (n = { ok: 0, failed: 0 }));
    n[result]++;
    if (result === 'ok') this.loadsOk++;
    else this.loadsFailed++;
  }

  // A failed organization the store no longer lists (its data was removed) has nothing left to
  // retry: forget the failure, so its searches answer like any organization without a snapshot.
  private forgetUnlisted(listed: Set<string>): void {
    for (const [org, f] of this.failures) {
      if (listed.has(org)) continue;
      this.failures.delete(org);
      this.cleared++;
      this.log.info(
        { organization_id: org, version: f.version },
        'catalog: failed organization no longer in the store; forgotten',
      );
    }
  }

  // A loaded organization missing from the store's list (a Redis restarted without its data, a
  // deleted folder) keeps being served from memory; say so once, not every second.
  private noteMissing(orgs: string[]): void {
    const listed = new Set(orgs);
    for (const [org, l] of this.indexes) {
      if (listed.has(org)) {
        this.missingInStore.delete(org);
        continue;
      }
      if (this.missingInStore.has(org)) continue;
      this.missingInStore.add(org);
      this.log.warn(
        { organization_id: org, version: l.version },
        'catalog: the store has no snapshot of this organization any more; keeping the loaded index',
      );
    }
  }

  /** The store's change token at the last listing (the start's or a poll's), and when it was made. */
  private listedToken: string | null = null;
  private listedAt = 0;

  /** The store's change token (snapshots published since it was read change it), or null when it has none. */
  private changeToken(): Promise<string | null> {
    return this.store.snapshots.changeToken ? this.store.snapshots.changeToken() : Promise.resolve(null);
  }

  /** Lists and loads every organization's newest snapshot, and records `token` as that listing's. */
  private async loadAll(token: string | null, starting: boolean): Promise<ReloadSummary> {
    const summary = await this.load(null, starting);
    this.listedToken = token;
    this.listedAt = Date.now();
    return summary;
  }

  // The fallback for lost broadcasts and for imports without a reload; at most one queued at a time.
  private poll(): void {
    // Also before `ready`: a store down at start is retried here.
    if (this.pollQueued || this.stopped) return;
    this.pollQueued = true;
    this.enqueue(async () => {
      this.pollQueued = false;
      // Nothing published since the last listing (the store's change token is the same), no
      // organization waiting for a retry, and a full listing less than FULL_LISTING_MS ago:
      // nothing to do (listing 10,000 embedded pointers took 0.9 s of CPU, every second).
      const token = await this.changeToken();
      if (
        token !== null &&
        token === this.listedToken &&
        this.failures.size === 0 &&
        Date.now() - this.listedAt < FULL_LISTING_MS
      )
        return;
      return this.loadAll(token, false);
    }).then(
      () => this.storeState(null),
      (err) => this.storeState(err as Error),
    );
  }

  // Logs store outages once when they begin and once when they end, not every second.
  private storeState(err: Error | null): void {
    if (err && !this.storeDown) this.log.warn({ err: err.message }, 'catalog: store unavailable, serving from memory');
    if (!err && this.storeDown) this.log.info({}, 'catalog: store available again');
    this.storeDown = err !== null;
    this.storeError = err?.message ?? null;
  }

  /** Why the store could not be read at the last try, or null (for /readyz while not ready). */
  storeError: string | null = null;

  private async heartbeat(): Promise<void> {
    if (this.leaving) return;
    const entry: ServerEntry = {
      id: this.serverId,
      pid: process.pid,
      hostname: hostname(),
      pidNamespace: pidNamespace(),
      adminUrl: this.opts.adminUrl,
      startedAt: this.startedAt,
      heartbeatAt: Date.now(),
    };
    try {
      await this.store.fleet.registerServer(entry, this.opts.heartbeatMs * 5);
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'catalog: heartbeat failed');
    }
  }

  private onRequest(req: ReloadRequest): void {
    const signals = this.store.fleet.signals;
    if (!signals || this.stopped) return;
    let answer = this.answered.get(req.requestId);
    if (answer === undefined) {
      const org = req.organizationId ? parseOrganizationId(req.organizationId) : null;
      answer = this.reload(org).then(
        (summary): ReloadAck => ({ ok: true, summary }),
        (err): ReloadAck => ({ ok: false, error: (err as Error).message ?? String(err) }),
      );
      this.answered.set(req.requestId, answer);
      if (this.answered.size > ANSWERED_MAX) this.answered.delete(this.answered.keys().next().value!);
    }
    answer
      .then((ack) => signals.putAck(req.requestId, this.serverId, ack))
      .catch((err) =>
        this.log.warn(
          { err: (err as Error).message, request_id: req.requestId },
          'catalog: could not acknowledge reload',
        ),
      );
  }
}
