import { availableParallelism } from 'node:os';
import * as v from 'valibot';
import type { StoreConfig } from '../store/stores.js';
import { parseRfc3339 } from '../time/rfc3339.js';

/** The validated configuration of the server and the command-line tools (CONTRACT 8, 10); `redisUrl` and `dataDir` name the store. */
export interface Config extends StoreConfig {
  port: number;
  host: string;
  adminPort: number;
  adminHost: string;
  logLevel: LogLevel;
  /** epoch ms of SUNSET_AT, or null when no sunset is configured */
  sunsetAt: number | null;
  /** per-key token bucket (RATE_LIMIT_RPS, RATE_LIMIT_BURST), or null when off (the default) */
  rateLimit: { rps: number; burst: number } | null;
  /** SHUTDOWN_TIMEOUT_MS: how long SIGTERM waits for responses still being written (default 10 s) */
  shutdownTimeoutMs: number;
  /** INDEX_BUILD_THREAD: 'worker' (default) builds indexes off the request thread; 'main' is a diagnostic for comparisons */
  indexBuildThread: 'worker' | 'main';
  /** ORGANIZATIONS: the shard this replica serves (lower-case UUIDs), or null for every organization */
  organizations: ReadonlySet<string> | null;
  /** serving threads on the public port; 1: the main thread serves (no worker threads) */
  serverThreads: number;
  /**
   * SLOW_CLIENT_BUFFER_MB (default 256), in bytes: the most response bytes the process holds for
   * clients that read slowly; past it another large answer is refused (src/http/uws-adapter.ts)
   */
  slowClientBufferBytes: number;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Thrown by loadConfig; `problems` are complete sentences naming the variable and the value. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

const got = (issue: { input: unknown }) => `got ${JSON.stringify(issue.input)}`;

/**
 * A REDIS_URL as an error may show it: a password in it is masked (`redis://:***@host`), as at
 * run time. Each comma-separated part is masked from the first ':' after '//' to its last '@', so
 * a password holding an unencoded '@' or '/' (an invalid URL, hence the error) does not show.
 */
export function maskedUrl(value: string): string {
  return value
    .split(',')
    .map((part) =>
      part
        .replace(/^(\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/]*:).*@/, '$1***@')
        // ioredis reads a query's password too (`?password=`, `?pass%77ord=`): refused by the
        // check, but not to be shown by it; every query value but db's is masked
        .replace(/([?&])([^=&#]*)=([^&#]*)/g, (all, sep: string, name: string) =>
          name === 'db' ? all : `${sep}${name}=***`,
        ),
    )
    .join(',');
}

const port = (name: string) =>
  v.pipe(
    v.string(),
    v.check(
      (s) => /^[0-9]{1,5}$/.test(s) && +s >= 1 && +s <= 65535,
      (i) => `config: ${name} must be an integer 1-65535, ${got(i)}`,
    ),
    v.transform(Number),
  );

const host = (name: string) =>
  v.pipe(
    v.string(),
    // A host name or an IPv4/IPv6 literal; no scheme, no port, no spaces.
    v.regex(/^[A-Za-z0-9.:_-]{1,253}$/, (i) => `config: ${name} must be a host name or IP address, ${got(i)}`),
  );

// Serving threads on the public port (src/server/thread-pool.ts); 1 serves on the main thread.
const serverThreads = v.pipe(
  v.string(),
  v.check(
    (s) => /^[0-9]{1,3}$/.test(s) && +s >= 1 && +s <= 256,
    (i) => `config: SERVER_THREADS must be an integer 1-256, ${got(i)}`,
  ),
  v.transform(Number),
);

/**
 * What is wrong with one REDIS_URL part, or null. ioredis takes the path as the database number:
 * `/abc` made it send `SELECT NaN` (every command-line tool then died with ioredis's stack), and a
 * URL without a host or with port 0 passed as a URL and failed only on connecting.
 */
/** Does `s` percent-decode (the user and password of a URL are decoded before use)? */
function decodes(s: string): boolean {
  try {
    decodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

function redisUrlProblem(one: string, seeds: number): string | null {
  if (!/^rediss?:\/\//.test(one)) return 'must be a redis:// or rediss:// URL';
  const hostAndPort = 'must be a redis:// or rediss:// URL with a valid host and a port of 1-65535';
  let u: URL;
  try {
    u = new URL(one);
  } catch {
    return hostAndPort;
  }
  if (u.hostname === '' || !(u.port === '' || (+u.port >= 1 && +u.port <= 65535))) return hostAndPort;
  if (!decodes(u.username) || !decodes(u.password))
    return "must percent-encode its user and password validly (each '%' followed by two hex digits)";
  // ioredis takes any query parameter as an option (`?password=`, `?family=`), for a single node
  // only: the cluster's nodes and the direct reads would go on without it
  for (const name of u.searchParams.keys())
    if (name !== 'db')
      return 'may carry no query parameter but db (a password goes before the host: redis://:password@host)';
  if (u.searchParams.getAll('db').length > 1 || (u.searchParams.has('db') && !/^\/?$/.test(u.pathname)))
    return 'must name its database once';
  const path = u.pathname === '/' ? '' : u.pathname;
  const db = u.searchParams.get('db');
  if (!/^(\/[0-9]{1,9})?$/.test(path) || (db !== null && !/^[0-9]{1,9}$/.test(db)))
    return 'may name a database only by its number after the host (redis://host:6379/2)';
  if (seeds > 1 && (/[1-9]/.test(path) || (db !== null && /[1-9]/.test(db))))
    return 'must not name a database other than 0 in a list of cluster seed nodes (a cluster has only database 0)';
  return null;
}

/**
 * What is wrong with a list of seed URLs that are each valid: the cluster's client connects to
 * every node with the first seed's scheme, user and password, so a `rediss://` second seed after
 * a `redis://` first one went over plain TCP unsaid (the fleet audit).
 */
function seedListProblem(parts: readonly string[]): string | null {
  if (parts.length < 2) return null;
  const [first, ...rest] = parts.map((p) => new URL(p.trim()));
  for (const u of rest)
    if (u.protocol !== first.protocol || u.username !== first.username || u.password !== first.password)
      return 'must give every cluster seed node the same scheme (redis:// or rediss://), user and password: the first one is used for all of them';
  return null;
}

function redisUrlsProblem(input: string): string | null {
  const parts = input.split(',');
  return (
    parts.map((one) => redisUrlProblem(one.trim(), parts.length)).find((p) => p !== null) ?? seedListProblem(parts)
  );
}

const redisUrl = v.pipe(
  v.string(),
  // One URL, or a comma-separated list of Redis Cluster seed nodes (see store/redis-connection.ts).
  v.check(
    (s) => redisUrlsProblem(s) === null,
    (i) => {
      const input = String(i.input);
      const parts = input.split(',');
      const why = redisUrlsProblem(input) ?? '';
      const list =
        parts.length > 1 && why.startsWith('must be a')
          ? ', or a comma-separated list of them (cluster seed nodes)'
          : '';
      return `config: REDIS_URL ${why}${list}, got ${JSON.stringify(maskedUrl(input))}`;
    },
  ),
);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const organizations = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const list = dataset.value.split(',').map((s) => s.trim());
    const bad = list.find((s) => !UUID.test(s));
    if (bad !== undefined) {
      addIssue({
        message: `config: ORGANIZATIONS must be a comma-separated list of organization UUIDs, got ${JSON.stringify(bad)} in ${JSON.stringify(dataset.value.length > 200 ? dataset.value.slice(0, 200) + '...' : dataset.value)}`,
      });
      return NEVER;
    }
    return new Set(list.map((s) => s.toLowerCase())) as ReadonlySet<string>;
  }),
);

const dataDir = v.pipe(
  v.string(),
  // blank is a typo, not a folder (" " made a folder named with a space)
  v.check(
    (s) => s.trim() !== '',
    (i) => `config: DATA_DIR must be a folder path, ${got(i)}`,
  ),
);

const logLevel = v.picklist(LOG_LEVELS, (i) => `config: LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, ${got(i)}`);

const sunsetAt = v.pipe(
  v.string(),
  v.check(
    (s) => parseRfc3339(s) !== null,
    (i) => `config: SUNSET_AT must be an RFC 3339 date-time with offset (e.g. 2026-12-31T00:00:00Z), ${got(i)}`,
  ),
  // An HTTP-date has a four-digit year: 0000-01-01T00:00:00+01:00 is in year -1 once in UTC, and
  // the header said "Dec -0001" (an audit)
  v.check(
    (s) => {
      const year = new Date(parseRfc3339(s)!).getUTCFullYear();
      return year >= 0 && year <= 9999;
    },
    (i) => `config: SUNSET_AT must fall in the years 0000-9999 once in UTC (it is sent as an HTTP-date), ${got(i)}`,
  ),
  v.transform((s) => parseRfc3339(s)!),
);

const rateRps = v.pipe(
  v.string(),
  v.check(
    (s) => /^[0-9]{1,7}(\.[0-9]{1,6})?$/.test(s) && Number(s) <= 1_000_000,
    (i) => `config: RATE_LIMIT_RPS must be a number of requests a second per key from 0 (off) to 1000000, ${got(i)}`,
  ),
  v.transform(Number),
);

const rateBurst = v.pipe(
  v.string(),
  v.check(
    (s) => /^[0-9]{1,7}$/.test(s) && +s >= 1 && +s <= 1_000_000,
    (i) => `config: RATE_LIMIT_BURST must be an integer 1-1000000, ${got(i)}`,
  ),
  v.transform(Number),
);

const shutdownMs = v.pipe(
  v.string(),
  v.check(
    (s) => /^[0-9]{1,6}$/.test(s) && +s <= 600_000,
    (i) => `config: SHUTDOWN_TIMEOUT_MS must be an integer 0-600000 (milliseconds), ${got(i)}`,
  ),
  v.transform(Number),
);

const slowClientBufferMb = v.pipe(
  v.string(),
  v.check(
    (s) => /^[0-9]{1,7}$/.test(s) && +s >= 1 && +s <= 1_048_576,
    (i) => `config: SLOW_CLIENT_BUFFER_MB must be an integer 1-1048576 (MiB), ${got(i)}`,
  ),
  v.transform(Number),
);

// The variables that name the store: the whole configuration of the tools that only open it.
const STORE_ENTRIES = {
  REDIS_URL: v.optional(redisUrl),
  DATA_DIR: v.optional(dataDir, './data'),
};
const StoreEnvSchema = v.object(STORE_ENTRIES);

const SunsetEnvSchema = v.object({ SUNSET_AT: v.optional(sunsetAt) });

const EnvSchema = v.object({
  PORT: v.optional(port('PORT'), '3000'),
  HOST: v.optional(host('HOST'), '0.0.0.0'),
  ADMIN_PORT: v.optional(port('ADMIN_PORT'), '9464'),
  ADMIN_HOST: v.optional(host('ADMIN_HOST'), '127.0.0.1'),
  ...STORE_ENTRIES,
  LOG_LEVEL: v.optional(logLevel, 'info'),
  SUNSET_AT: v.optional(sunsetAt),
  RATE_LIMIT_RPS: v.optional(rateRps),
  RATE_LIMIT_BURST: v.optional(rateBurst),
  SHUTDOWN_TIMEOUT_MS: v.optional(shutdownMs, '10000'),
  SLOW_CLIENT_BUFFER_MB: v.optional(slowClientBufferMb, '256'),
  // One serving thread a core by default: they share one copy of every index (README: Threads).
  SERVER_THREADS: v.optional(serverThreads, String(Math.min(256, availableParallelism()))),
  INDEX_BUILD_THREAD: v.optional(
    v.picklist(
      ['worker', 'main'],
      (i) => `config: INDEX_BUILD_THREAD must be worker or main, got ${JSON.stringify(i.input)}`,
    ),
    'worker',
  ),
  ORGANIZATIONS: v.optional(organizations),
});

// The variables `schema` reads, an empty one counting as unset; throws ConfigError listing every problem.
function parseEnv<S extends typeof EnvSchema | typeof StoreEnvSchema | typeof SunsetEnvSchema>(
  schema: S,
  env: NodeJS.ProcessEnv,
): v.InferOutput<S> {
  const input: Record<string, string> = {};
  const problems: string[] = [];
  for (const key of Object.keys(schema.entries)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
    // Unset means every organization; set and empty is refused: it is what a failed
    // `ORGANIZATIONS=$(npm run -s routing -- organizations ...)` leaves, and read as unset it made a
    // shard's replica load and serve every organization of the fleet.
    else if (key === 'ORGANIZATIONS' && value === '')
      problems.push(
        'config: ORGANIZATIONS is set but empty: list the organization UUIDs of this replica (comma-separated), or unset it to serve every organization',
      );
  }
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (!result.success) throw new ConfigError([...problems, ...result.issues.map((i) => i.message)]);
  if (problems.length > 0) throw new ConfigError(problems);
  return result.output;
}

/** Validates the environment; an empty variable counts as unset. Throws ConfigError listing every problem. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const o = parseEnv(EnvSchema, env);
  const rps = (o.RATE_LIMIT_RPS as number | undefined) ?? 0;
  const burst = o.RATE_LIMIT_BURST as number | undefined;
  if (burst !== undefined && rps === 0) {
    throw new ConfigError([
      `config: RATE_LIMIT_BURST is set (${burst}) but RATE_LIMIT_RPS is not; set RATE_LIMIT_RPS to enable rate limiting`,
    ]);
  }
  const wildcard = (h: string) => h === '0.0.0.0' || h === '::';
  if (o.PORT === o.ADMIN_PORT && (o.HOST === o.ADMIN_HOST || wildcard(o.HOST) || wildcard(o.ADMIN_HOST))) {
    throw new ConfigError([
      `config: ADMIN_PORT must differ from PORT (both ${o.PORT}): the admin listener (/healthz, /readyz, /metrics, reloads) needs a port of its own`,
    ]);
  }
  return {
    port: o.PORT as number,
    host: o.HOST,
    adminPort: o.ADMIN_PORT as number,
    adminHost: o.ADMIN_HOST,
    redisUrl: o.REDIS_URL ?? null,
    dataDir: o.DATA_DIR,
    logLevel: o.LOG_LEVEL,
    sunsetAt: o.SUNSET_AT ?? null,
    rateLimit: rps > 0 ? { rps, burst: burst ?? Math.max(1, Math.ceil(rps)) } : null,
    shutdownTimeoutMs: o.SHUTDOWN_TIMEOUT_MS as number,
    indexBuildThread: o.INDEX_BUILD_THREAD,
    organizations: o.ORGANIZATIONS ?? null,
    serverThreads: o.SERVER_THREADS as number,
    slowClientBufferBytes: (o.SLOW_CLIENT_BUFFER_MB as number) * 2 ** 20,
  };
}

/**
 * Validates only the variables that name the store (REDIS_URL, DATA_DIR), with the same rules and
 * messages as loadConfig: for the tools that open the store and nothing else (`snapshot`,
 * `reload`), which never read the server's variables. Throws ConfigError.
 */
export function loadStoreConfig(env: NodeJS.ProcessEnv = process.env): StoreConfig {
  const o = parseEnv(StoreEnvSchema, env);
  return { redisUrl: o.REDIS_URL ?? null, dataDir: o.DATA_DIR };
}

/**
 * Validates only SUNSET_AT, with the same rule and message as loadConfig: for `routing nginx`,
 * whose own error pages carry the replicas' Sunset and Deprecation. Throws ConfigError.
 */
export function loadSunsetConfig(env: NodeJS.ProcessEnv = process.env): number | null {
  return parseEnv(SunsetEnvSchema, env).SUNSET_AT ?? null;
}
