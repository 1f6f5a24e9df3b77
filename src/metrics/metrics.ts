import type * as Prom from 'prom-client';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom.js';

/** One organization's loaded index, as the metrics report it. */
export interface OrgStat {
  organizationId: string;
  version: number;
  messages: number;
  contacts: number;
}

/** Snapshot load totals as the catalog counts them (its own polls and broadcasts included). */
export interface ReloadStat {
  loadsOk: number;
  loadsFailed: number;
  /** duration of the last reload that loaded or failed something, or null */
  lastReloadSeconds: number | null;
  /** loads by organization and result, since start */
  byOrganization?: { organizationId: string; ok: number; failed: number }[];
  /** organizations whose last load failed */
  failing?: string[];
}

/** The Prometheus registry of one server process and the instruments the HTTP layer feeds. */
export class Metrics {
  readonly registry = new Registry();
  /**
   * The series of every organization (five an organization), rendered again only when
   * `orgVersion` changed: with 2,000 organizations each scrape made and printed ~10,000 series,
   * ~0.9 MB of text and 50-80 ms of the main thread, and its garbage grew the young generation to
   * 32 MiB (RSS 72 -> 121-143 MiB under a scrape every 2 s, against 81-95 MiB now).
   */
  private readonly orgRegistry = new Registry();
  private orgText: { version: number; text: string } | null = null;
  readonly requests: Prom.Counter<'listener' | 'status'>;
  readonly latency: Prom.Histogram<'listener'>;
  readonly reloads: Prom.Counter<'result'>;
  readonly reloadSeconds: Prom.Histogram;

  /**
   * `orgStats` is read at scrape time, so the numbers are never stale; `orgVersion` (the catalog's
   * statsVersion) changes whenever they may have, and without it they are read at every scrape.
   */
  constructor(
    readOrgStats: () => OrgStat[],
    private readonly orgVersion: (() => number) | null = null,
  ) {
    const orgStats = oncePerTurn(readOrgStats);
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP responses sent, by listener and status.',
      labelNames: ['listener', 'status'],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request to response, by listener.',
      labelNames: ['listener'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [this.registry],
    });
    this.reloads = new Counter({
      name: 'catalog_admin_reloads_total',
      help: 'POST /admin/reload calls, by result.',
      labelNames: ['result'],
      registers: [this.registry],
    });
    // both results listed from the start at 0, so the series exist before the first call (on
    // Redis, reloads come by broadcast and there may never be one) and rate() sees the first
    for (const result of ['ok', 'error']) this.reloads.inc({ result }, 0);
    this.reloadSeconds = new Histogram({
      name: 'catalog_admin_reload_duration_seconds',
      help: 'Duration of POST /admin/reload calls.',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [this.registry],
    });
    const perOrg = (name: string, help: string, pick: (s: OrgStat) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['organization_id'],
        registers: [this.orgRegistry],
        collect() {
          this.reset();
          for (const s of orgStats()) this.set({ organization_id: s.organizationId }, pick(s));
        },
      });
    perOrg('index_messages', 'Messages in the loaded index, per organization.', (s) => s.messages);
    perOrg('index_contacts', 'Contacts in the loaded index, per organization.', (s) => s.contacts);
    perOrg('index_snapshot_version', 'Snapshot version of the loaded index, per organization.', (s) => s.version);
  }

  /** The Prometheus text of every series: the process's, then the organizations' (see orgRegistry). */
  async render(): Promise<string> {
    const text = await this.registry.metrics();
    const version = this.orgVersion?.() ?? Number.NaN;
    if (this.orgText === null || this.orgText.version !== version)
      this.orgText = { version, text: await this.orgRegistry.metrics() };
    // (prom-client leaves a blank line between families)
    return this.orgText.text === '' ? text : `${text}\n${this.orgText.text}`;
  }

  /** Adds catalog-wide reload totals (the catalog also reloads on its own, e.g. on a Redis signal). */
  addReloadStats(readStats: () => ReloadStat | null): void {
    const read = oncePerTurn(readStats);
    const reg = [this.registry];
    const perOrg = [this.orgRegistry];
    // Counters (type counter, `_total`, so rate() and resets read right) mirroring the catalog's
    // own counts: set at scrape time by a reset and one increment of the whole count.
    new Counter({
      name: 'catalog_snapshot_loads_total',
      help: 'Snapshot loads done by the catalog since start, by result.',
      labelNames: ['result'],
      registers: reg,
      collect() {
        const r = read();
        if (r) {
          this.reset();
          this.inc({ result: 'ok' }, r.loadsOk);
          this.inc({ result: 'failed' }, r.loadsFailed);
        }
      },
    });
    new Counter({
      name: 'catalog_organization_snapshot_loads_total',
      help: 'Snapshot loads done by the catalog since start, by organization and result.',
      labelNames: ['organization_id', 'result'],
      registers: perOrg,
      collect() {
        this.reset();
        for (const o of read()?.byOrganization ?? []) {
          this.inc({ organization_id: o.organizationId, result: 'ok' }, o.ok);
          this.inc({ organization_id: o.organizationId, result: 'failed' }, o.failed);
        }
      },
    });
    new Gauge({
      name: 'catalog_organization_failing',
      help: '1 for each organization whose last snapshot load failed (served from an older version, or 503).',
      labelNames: ['organization_id'],
      registers: perOrg,
      collect() {
        this.reset();
        for (const org of read()?.failing ?? []) this.set({ organization_id: org }, 1);
      },
    });
    new Gauge({
      name: 'catalog_last_reload_seconds',
      help: 'Duration of the last reload that loaded or failed a snapshot.',
      registers: reg,
      collect() {
        const r = read();
        if (r && r.lastReloadSeconds !== null) this.set(r.lastReloadSeconds);
      },
    });
  }

  // prom-client's labelled children, made once: `inc({ listener, status })` hashes its labels on
  // every call (~1.5 µs of a request's ~50 under load, measured with a rare term)
  private readonly counted = new Map<number, Prom.Counter.Internal>();
  private readonly timed = new Map<string, Prom.Histogram.Internal<'listener'>>();

  /** The request counter of one listener and status. */
  private counterOf(listener: 'public' | 'admin', status: number): Prom.Counter.Internal {
    const key = (listener === 'public' ? 0 : 1000) + status;
    let child = this.counted.get(key);
    if (child === undefined) {
      child = this.requests.labels({ listener, status: String(status) });
      this.counted.set(key, child);
    }
    return child;
  }

  /** The latency histogram of one listener. */
  private latencyOf(listener: 'public' | 'admin'): Prom.Histogram.Internal<'listener'> {
    let child = this.timed.get(listener);
    if (child === undefined) {
      child = this.latency.labels({ listener });
      this.timed.set(listener, child);
    }
    return child;
  }

  /** Records one response. */
  observe(listener: 'public' | 'admin', status: number, startedAt: bigint): void {
    this.record(listener, status, Number(process.hrtime.bigint() - startedAt) / 1e9);
  }

  /** Records one response that took `seconds` (a serving thread's, measured there). */
  record(listener: 'public' | 'admin', status: number, seconds: number): void {
    this.counterOf(listener, status).inc();
    this.latencyOf(listener).observe(seconds);
  }
}

/**
 * `read`'s value, computed once per turn of the event loop: a scrape runs its collectors together,
 * and eight of them read the catalog (each reading built every organization's figures: with
 * 10,000 organizations a scrape took 0.25-0.5 s of the main thread).
 */
function oncePerTurn<T>(read: () => T): () => T {
  let cached: { value: T } | null = null;
  return () => {
    if (cached === null) {
      cached = { value: read() };
      setImmediate(() => {
        cached = null;
      });
    }
    return cached.value;
  };
}
