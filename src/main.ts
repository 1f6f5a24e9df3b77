import { KeyCache, lookupLimiter } from './auth/key-cache.js';
import { Catalog } from './catalog/catalog.js';
import { ConfigError, loadConfig, type Config } from './config/config.js';
import { createAdminApp } from './http/admin-app.js';
import { warmTokenizer } from './text/analyze.js';
import { createPublicApp } from './http/public-app.js';
import { RateLimiter } from './auth/rate-limit.js';
import { inFlight, SHUTDOWN_GRACE_MS } from './http/respond.js';
import { type ListenVars, listenFailure } from './http/listen-failure.js';
import { loadUws, type TemplatedApp, type us_listen_socket, type UwsModule } from './http/uws.js';
import { createLogger, type Logger } from './log/logger.js';
import { Metrics } from './metrics/metrics.js';
import { catalogOrgStats, catalogReloadStats } from './metrics/catalog-stats.js';
import { openStores } from './store/open-store.js';
import { ThreadPool } from './server/thread-pool.js';
import { prefaultDuringStart } from './store/prefault.js';
import type { ServingState } from './server/thread-protocol.js';
import { within } from './runtime/within.js';
import { scavengeOnOneThread } from './runtime/gc-flags.js';

/** Prints start-up problems as plain lines (no stack trace) and exits 1. */
function refuse(lines: string[]): never {
  for (const line of lines) process.stderr.write(line + '\n');
  process.exit(1);
}

// uSockets' flag; the native module exports it but the typings declare it only inside an enum.
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

type ListenWithOptions = (
  host: string,
  port: number,
  options: number,
  cb: (socket: us_listen_socket | false) => void,
) => void;

/**
 * Listens with an exclusive port: uWS sets SO_REUSEPORT by default, so a second server started by
 * mistake on a taken port would silently share it instead of failing.
 */
function listen(app: TemplatedApp, host: string, port: number, vars: ListenVars): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    // The native binary takes (host, port, options, cb); the bundled typings lack this overload.
    (app.listen as unknown as ListenWithOptions).call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket) resolve(socket);
      else void listenFailure(host, port, vars).then(reject);
    });
  });
}

const PUBLIC: ListenVars = { host: 'HOST', port: 'PORT' };
const ADMIN: ListenVars = { host: 'ADMIN_HOST', port: 'ADMIN_PORT' };

const USAGE = `Usage: npm start   (node dist/main.js)

The search service: the public listener (GET /contacts/message-search) and the admin listener
(/healthz, /readyz, /metrics, POST /admin/reload). It takes no arguments; it is configured by
environment variables, each checked at start (a bad value stops it with exit code 1 naming the
variable):

  PORT (3000)  HOST (0.0.0.0)  ADMIN_PORT (9464)  ADMIN_HOST (127.0.0.1)
  REDIS_URL (unset: the embedded store in DATA_DIR, default ./data)  ORGANIZATIONS (all)
  LOG_LEVEL (info)  SUNSET_AT  RATE_LIMIT_RPS  RATE_LIMIT_BURST  SHUTDOWN_TIMEOUT_MS (10000)
  INDEX_BUILD_THREAD (worker)  SERVER_THREADS (one a core)  SLOW_CLIENT_BUFFER_MB (256)

README.md, "Configuration", says what each one does.
`;

/** --help prints the usage; any other argument is refused rather than ignored (exit 2). */
function checkArguments(args: readonly string[]): void {
  if (args.length === 0) return;
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  process.stderr.write(
    `server: unknown argument ${JSON.stringify(args[0])}: the server takes none, its configuration is environment variables\n\n${USAGE}`,
  );
  process.exit(2);
}

async function main(): Promise<void> {
  checkArguments(process.argv.slice(2));
  // A signal before the listeners are up (loading the configuration and uWS, the store's first
  // connection, the first loads) is kept and acted on once they are: the usual drain and exit 0,
  // logged. Node's default ended the process with 143 and no line; exiting mid-start could also
  // leave serving threads' uWS loops open. One listener a signal for the whole life: removing the
  // last listener stops node's signal watcher, and a signal it had received but not yet
  // dispatched went with it (an audit: 1 start in 10 ignored a SIGTERM sent as it finished, and
  // served on until a second one).
  let earlySignal: string | null = null;
  let onStopSignal: ((signal: string) => void) | null = null;
  const stopSignal = (signal: string) => () => {
    if (onStopSignal !== null) onStopSignal(signal);
    else earlySignal ??= signal;
  };
  process.on('SIGTERM', stopSignal('SIGTERM'));
  process.on('SIGINT', stopSignal('SIGINT'));

  scavengeOnOneThread();
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuse(err.problems);
    throw err;
  }
  let uws: UwsModule;
  try {
    uws = loadUws();
  } catch (err) {
    refuse([(err as Error).message]);
  }
  const logger: Logger = createLogger(config.logLevel);
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  // Request handlers catch their own errors; this is the net for everything else (a timer, a
  // callback after a response ended). One failed request or task must not take the server down.
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception; the server keeps serving'));

  // A store that is down now does not stop the start: the server listens, answers 503 and retries.
  const store = await openStores(config, (err, readOnly) =>
    readOnly
      ? logger.warn(
          { err: err.message },
          "store: DATA_DIR cannot be written: serving the snapshots it holds; keys' last use and this server's entry for npm run reload are not recorded",
        )
      : logger.warn({ err: err.message }, 'store: unavailable at start; serving 503 and retrying'),
  );
  // Read at scrape time only, once `catalog` exists.
  const metrics = new Metrics(
    () => catalogOrgStats(catalog),
    () => catalog.statsVersion,
  );
  metrics.addReloadStats(() => catalogReloadStats(catalog));
  // One set of token buckets for the process, in shared memory: every serving thread takes from it.
  const rateLimiter = config.rateLimit ? new RateLimiter(config.rateLimit) : null;
  // Store lookups of unknown key prefixes: one rate for the process, whatever SERVER_THREADS.
  const keyLookups = lookupLimiter();
  // What the process holds for slow readers, counted by every thread that serves the public port.
  const slowClientHeld = new SharedArrayBuffer(4);
  // SERVER_THREADS > 1: serving threads answer the public port; this thread keeps the rest.
  const pool: ThreadPool | null =
    config.serverThreads > 1
      ? new ThreadPool({
          config,
          keys: store.keys,
          // (called at shutdown only, once `keys` below exists)
          laterUses: (uses) => keys.noteUses(uses),
          // (called for a thread's key lookup: after `keys` below started, as the threads wait for it)
          afterLookup: (prefix, record, startedAt) => keys.afterLookup(prefix, record, startedAt),
          metrics,
          logger,
          state: () => servingState(catalog),
          rateLimit: rateLimiter?.exportShared() ?? null,
          keyLookups: keyLookups.exportShared(),
          slowClientHeld,
          faultHook: process.env.SERVING_THREAD_FAULT_HOOK === '1',
        })
      : null;
  const catalog = new Catalog(store, {
    logger,
    adminUrl: adminUrlOf(config),
    buildThread: config.indexBuildThread,
    storeConfig: { redisUrl: config.redisUrl, dataDir: config.dataDir },
    organizations: config.organizations,
    onLoaded: pool ? (org, version, built) => pool.loaded(org, version, built) : undefined,
    // the threads hear of it at once, not at the next periodic state post (up to 250 ms later)
    onReady: pool ? () => void pool.postState() : undefined,
    onUnavailable: pool ? () => pool.postState() : undefined,
  });
  // The start's large loads have their pages touched by another thread meanwhile: the first
  // serving thread, which has nothing else to do yet, or one of their own (store/prefault.ts).
  // Later loads do without.
  const started = prefaultDuringStart(pool ? (buffer, stop) => pool.prefault(buffer, stop) : null);
  // Loading may take a while; the listeners open now so /readyz can say 503 meanwhile.
  const loading = catalog.start();
  Promise.resolve(loading).then(started, started);
  Promise.resolve(loading).catch((err: unknown) => logger.error({ err }, 'catalog: initial load failed'));

  // This thread's cache reads the key set; with serving threads it only passes each listing on.
  const keys = new KeyCache(store.keys, {
    logger,
    lookupLimiter: keyLookups,
    onListing: pool ? (listing) => pool.listing(listing) : undefined,
  });
  await keys.start();
  // Keys too: a search before the first key listing answers 503, so /readyz must not say 200.
  const isReady = () => catalogIsReady(catalog) && keys.ready && (pool === null || pool.ready);
  const notReadyReason = (): string =>
    !catalogIsReady(catalog)
      ? catalog.storeError !== null
        ? `The store cannot be read yet (${catalog.storeError}); retrying every second.`
        : 'The snapshots present at start are still loading.'
      : !keys.ready
        ? `The API keys cannot be read yet${keys.lastError === null ? '' : ` (${keys.lastError})`}; retrying every second.`
        : 'The serving threads are taking their first key listing.';
  const publicApp = createPublicApp({
    uws,
    keys,
    metrics,
    logger,
    sunsetAt: config.sunsetAt,
    rateLimiter,
    slowClientBufferBytes: config.slowClientBufferBytes,
    slowClientHeld,
    indexes: {
      isReady,
      get: (org) => catalog.get(org),
      unavailable: (org) => catalog.unavailable(org),
      holds: (org) => catalog.holds(org),
    },
  });
  const adminApp = createAdminApp({
    uws,
    metrics,
    logger,
    catalog: { isReady, notReadyReason, reload: (org) => catalog.reload(org), failed: () => catalog.failed() },
    beforeScrape: pool ? () => pool.flushObserved() : undefined,
  });

  let sockets: us_listen_socket[];
  if (pool) {
    // Refuses a port another process holds (as the exclusive listen below), then lets the threads share it.
    uws.us_listen_socket_close(await listen(uws.App(), config.host, config.port, PUBLIC));
    // The admin port is tried the same way before the threads start: a taken one must stop the
    // start while no thread holds a uWS listener (exiting then aborted the process: uv_loop_close
    // with open handles). It opens for real after them, so that once /readyz answers, the
    // public port does too.
    uws.us_listen_socket_close(await listen(uws.App(), config.adminHost, config.adminPort, ADMIN));
    await pool.start();
    try {
      sockets = [await listen(adminApp, config.adminHost, config.adminPort, ADMIN)];
    } catch (err) {
      // taken between the try above and now: the threads hold uWS listeners, so they are stopped
      // before the start fails (an exit with them open aborts the process)
      await pool.stop(1000);
      throw err;
    }
    if (process.env.SERVING_THREAD_FAULT_HOOK === '1') process.on('SIGUSR2', () => pool.fault(0));
  } else {
    // this thread answers searches: the tokenizer's tables allocated before the first one, not in it
    warmTokenizer();
    sockets = [
      await listen(publicApp, config.host, config.port, PUBLIC),
      await listen(adminApp, config.adminHost, config.adminPort, ADMIN),
    ];
  }
  logger.info(
    {
      port: config.port,
      host: config.host,
      admin_port: config.adminPort,
      admin_host: config.adminHost,
      store: store.kind,
      sunset_at: config.sunsetAt === null ? null : new Date(config.sunsetAt).toISOString(),
    },
    `listening on ${config.host}:${config.port}, admin on ${config.adminHost}:${config.adminPort}`,
  );

  let stopping = false;
  /** How long the shutdown gives the store once the responses are drained (see below). */
  const STORE_CLOSE_MS = 2000;
  // a second signal ends the wait for responses in flight (a slow reader can hold it for
  // SHUTDOWN_TIMEOUT_MS); the shutdown then goes on as usual (closing the threads' uWS loops in
  // order: an exit with them open aborts the process)
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'shutdown: second signal: not waiting for responses in flight any longer');
      inFlight.hurry();
      pool?.hurry();
      return;
    }
    stopping = true;
    // Held until the exit below: the drain's timers are unref'd, and with one thread, the
    // listeners closed and no connection left, nothing else kept the loop alive, so node ended
    // in the 0.5 s grace with exit 0, before the store's part (the last key uses) and the
    // "stopped" line (a slow-reader audit).
    setInterval(() => {}, 1000);
    // (with serving threads, the responses in flight are theirs: this thread serves none)
    logger.info(
      pool ? { signal, serving_threads: config.serverThreads } : { signal, in_flight: inFlight.count },
      'shutting down: no new connections, draining responses in flight',
    );
    // Out of the fleet registry first (not awaited: a paused Redis must not hold the drain), so
    // that a reload CLI does not try an admin port about to close.
    void catalog.leave();
    // Stop accepting. Answers are computed synchronously; what can still be in flight is a large
    // body a slow client is reading (backpressure) or an admin reload: wait for those, bounded.
    for (const s of sockets) uws.us_listen_socket_close(s);
    const threadsDrained = pool ? pool.stop(config.shutdownTimeoutMs) : Promise.resolve(true);
    // (with threads, the grace is theirs: this thread's responses are the admin listener's)
    const drained =
      (await threadsDrained) && (await inFlight.drain(config.shutdownTimeoutMs, pool ? 0 : SHUTDOWN_GRACE_MS));
    if (!drained)
      logger.warn(
        pool
          ? { timeout_ms: config.shutdownTimeoutMs }
          : { in_flight: inFlight.count, timeout_ms: config.shutdownTimeoutMs },
        'shutdown: responses still in flight were cut (the timeout, or a second signal)',
      );
    // The store's part (the last last_used_at flush, leaving the fleet registry, the load in
    // progress, closing the connection) is bounded: a paused Redis held it for ~20 s (10 s a
    // command), past a `docker stop`'s grace, under a log line that said nothing of it.
    const storeClosed = await within(
      (async () => {
        try {
          await keys.stop();
          await catalog.stop();
          await store.close();
        } catch (err) {
          logger.error({ err }, 'error during shutdown');
        }
        return true;
      })(),
      STORE_CLOSE_MS,
      () => false,
    );
    if (!storeClosed)
      logger.warn(
        { timeout_ms: STORE_CLOSE_MS },
        'shutdown: the store did not answer in time; exiting without it (the last key uses may be unrecorded; the fleet registry entry expires on its own)',
      );
    logger.info({ drained, store_closed: storeClosed }, 'stopped');
    logger.flush?.();
    process.exit(0);
  };
  onStopSignal = (signal) => void shutdown(signal);
  if (earlySignal !== null) {
    logger.info({ signal: earlySignal }, 'a stop signal came while starting: stopping now');
    void shutdown(earlySignal);
  }
}

/** What serving threads need of the catalog besides the indexes: readiness and the organizations answering 503. */
function servingState(catalog: Catalog): ServingState {
  const unavailable: ServingState['unavailable'] = [];
  for (const f of catalog.failed()) {
    const down = catalog.unavailable(f.organization_id);
    if (down) unavailable.push([f.organization_id, down.retryAfterSeconds]);
  }
  return { ready: catalog.ready, unavailable };
}

function catalogIsReady(catalog: Catalog): boolean {
  return catalog.ready;
}

/** Where `npm run reload` on this host reaches the admin listener (a wildcard bind means loopback works). */
function adminUrlOf(config: Config): string {
  const host = config.adminHost === '0.0.0.0' ? '127.0.0.1' : config.adminHost === '::' ? '::1' : config.adminHost;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.adminPort}`;
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`start: ${message}\n`);
  process.exit(1);
});
