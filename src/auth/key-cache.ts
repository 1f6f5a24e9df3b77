// a namespace import: crypto.hash is looked up at run time (Node 20 before 20.12 lacks it)
import * as crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { ServingKeyStore } from './key-store.js';
import { type KeyRecord, keyRecordProblem } from './key-record.js';
import { bearerToken, parseKey, REQUIRED_SCOPES } from './api-key.js';
import { RateLimiter } from './rate-limit.js';

/** What the endpoint needs to know about an authenticated key. */
export interface Principal {
  prefix: string;
  organizationIds: ReadonlySet<string>;
  scopes: ReadonlySet<string>;
}

export type AuthResult =
  | { ok: true; principal: Principal; hasRequiredScopes: boolean }
  | {
      ok: false;
      prefix: string | null;
      /**
       * Set when the prefix is unknown here and one store lookup was started (or is in flight) for
       * it: a key created since the last refresh. Once it settles, authenticate again (without a
       * new lookup): the key is cached if it exists.
       */
      lookup?: Promise<void>;
      /**
       * Set, on the authentication that follows a settled lookup, when that lookup failed: the
       * store could not say whether the key exists (503 for the request, not 401).
       */
      unavailable?: true;
    };

interface CachedKey {
  digest: Buffer;
  principal: Principal;
  revoked: boolean;
  /** epoch ms, or Infinity */
  expiresAt: number;
  /** epoch ms when it was read from the store by a single-key lookup, else 0 */
  lookedUpAt: number;
  /** the key holds every scope the endpoint requires (checked once, not per request) */
  hasRequiredScopes: boolean;
}

/**
 * SHA-256 of a secret. crypto.hash (Node >= 20.12) digests without a Hash object a call
 * (createHash().update().digest() cost ~1.5 µs of a request under load); older 20.x lack it.
 */
const sha256: (s: string) => Buffer =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'buffer') as unknown as Buffer
    : (s) => crypto.createHash('sha256').update(s, 'utf8').digest();

// Compared against when the prefix is unknown, so unknown and wrong-secret keys cost the same.
const DUMMY_DIGEST = crypto.createHash('sha256').update('no such key').digest();

export interface KeyCacheOptions {
  logger: Logger;
  /** how often the whole key set is re-read; revocation must take effect within 2 s */
  refreshMs?: number;
  /** how often last_used_at is flushed to the store */
  flushMs?: number;
  /**
   * The digest comparison (default `crypto.timingSafeEqual`). Tests inject a spy to check that an
   * unknown prefix and a wrong secret take the same path: one SHA-256, one 32-byte comparison.
   */
  compare?: (a: Buffer, b: Buffer) => boolean;
  /** store lookups of unknown prefixes allowed per second, and as a burst (default 20) */
  lookupsPerSecond?: number;
  /**
   * The token bucket of those lookups, when several caches (one a serving thread) must share one
   * rate: made with `lookupLimiter()` and attached in each thread. Default: a bucket of its own.
   */
  lookupLimiter?: RateLimiter;
  /**
   * Called with every key listing this cache installs from the store (the main thread passes it
   * on to the serving threads, whose caches take it with `install` and never list keys themselves).
   */
  onListing?: (listing: KeyListing) => void;
  /**
   * Called first thing in `authenticate` (a serving thread installs any key listing the main
   * thread has already sent, so a revocation seen by one thread is seen by all).
   */
  beforeAuthenticate?: () => void;
  /** how long a prefix the store does not know is remembered as unknown (default 1000 ms) */
  missTtlMs?: number;
}

/** The whole key set as read from the store, and when that read started (epoch ms). */
export interface KeyListing {
  records: KeyRecord[];
  startedAt: number;
}

/** The one bucket of a lookup limiter: every unknown prefix takes from it. */
const LOOKUP_BUCKET = 'lookups';

/**
 * The token bucket of store lookups for unknown prefixes (`perSecond` a second, as a burst too),
 * in shared memory: the main thread makes it, each serving thread attaches to it, so the store
 * sees at most that rate whatever the number of threads.
 */
export function lookupLimiter(perSecond = 20): RateLimiter {
  return new RateLimiter({ rps: perSecond, burst: perSecond, maxBuckets: 8 });
}

// Bounds of the lookup path, so random prefixes cannot flood the store or grow memory.
const MAX_LOOKUPS_IN_FLIGHT = 32;
const MAX_MISSES = 10_000;
/** How long a failed lookup answers the requests that waited for it (they re-authenticate at once). */
const LOOKUP_FAILURE_MS = 5_000;

/**
 * All API keys in memory, re-read from the store every second, so a known key never waits on the
 * store; `last_used_at` is collected in memory and written in batches.
 *
 * A prefix not in memory (a key created since the last refresh) gets one store lookup, shared by
 * concurrent requests; a prefix the store does not know is remembered for `missTtlMs`, and lookups
 * are rate-limited (a token bucket), so random prefixes cost the store at most that rate.
 */
export class KeyCache {
  private keys = new Map<string, CachedKey>();
  /** prefix -> epoch ms of its last successful use, formatted when flushed (not per request) */
  private lastUsed = new Map<string, number>();
  private loaded = false;
  private refreshing: Promise<void> | null = null;
  /** epoch ms when the read in `refreshing` started */
  private refreshStartedAt = 0;
  /** The records of the last listing installed from the store (see refresh). */
  private lastListing: KeyRecord[] | null = null;
  private timers: NodeJS.Timeout[] = [];
  private readonly store: ServingKeyStore;
  private readonly logger: Logger;
  private readonly refreshMs: number;
  private readonly flushMs: number;
  private readonly compare: (a: Buffer, b: Buffer) => boolean;
  private readonly lookups = new Map<string, Promise<void>>();
  /** prefix -> epoch ms until which it is known to be absent from the store */
  private readonly misses = new Map<string, number>();
  /** prefix -> epoch ms its last lookup failed (the store did not answer) */
  private readonly lookupFailures = new Map<string, number>();
  private readonly lookupLimiter: RateLimiter;
  private readonly onListing: ((listing: KeyListing) => void) | undefined;
  private readonly beforeAuthenticate: (() => void) | undefined;
  private readonly missTtlMs: number;

  constructor(store: ServingKeyStore, opts: KeyCacheOptions) {
    this.store = store;
    this.logger = opts.logger;
    this.refreshMs = opts.refreshMs ?? 1000;
    this.flushMs = opts.flushMs ?? 5000;
    this.compare = opts.compare ?? crypto.timingSafeEqual;
    this.lookupLimiter = opts.lookupLimiter ?? lookupLimiter(opts.lookupsPerSecond ?? 20);
    this.onListing = opts.onListing;
    this.beforeAuthenticate = opts.beforeAuthenticate;
    this.missTtlMs = opts.missTtlMs ?? 1000;
  }

  /** True once the first read of the keys succeeded. */
  get ready(): boolean {
    return this.loaded;
  }

  /** Why the last read of the keys failed, or null after a read that succeeded (for /readyz). */
  lastError: string | null = null;

  /**
   * Starts the flush timer of last_used_at and, unless the key listings come from another thread
   * (`listings: 'installed'`), loads the keys once and re-reads them every `refreshMs`. A store
   * that is down now is logged, not thrown: `ready` stays false (searches answer 503) until a
   * listing is in.
   */
  async start(listings: 'refreshed' | 'installed' = 'refreshed'): Promise<void> {
    const f = setInterval(() => void this.flush(), this.flushMs);
    f.unref();
    this.timers.push(f);
    if (listings === 'installed') return;
    await this.refresh().catch((err) =>
      this.logger.warn({ err: (err as Error).message }, 'keys: cannot read the keys yet; retrying every refresh'),
    );
    const r = setInterval(() => {
      // while a read is still pending (a paused Redis holds one for its 10 s timeout), a tick
      // would only share it, and log its failure once more: 10 identical warnings at once
      if (this.refreshing !== null) return;
      this.refresh().catch((err) =>
        this.logger.warn({ err: (err as Error).message }, 'keys: refresh failed, serving the previous key set'),
      );
    }, this.refreshMs);
    r.unref();
    this.timers.push(r);
  }

  /** Re-reads every key from the store; concurrent calls share one read. */
  refresh(): Promise<void> {
    if (!this.refreshing) {
      const startedAt = Date.now();
      this.refreshStartedAt = startedAt;
      this.refreshing = this.store
        .listKeys({ lastUses: false })
        .then(
          (records) => {
            this.lastError = null;
            // the store's same listing (its file unchanged): the key set in memory already is it,
            // plus any key looked up since; nothing to rebuild or post to the threads
            if (records === this.lastListing && this.loaded) return;
            this.lastListing = records;
            this.install({ records, startedAt });
            this.onListing?.({ records, startedAt });
          },
          (err: unknown) => {
            this.lastError = (err as Error).message ?? String(err);
            throw err;
          },
        )
        .finally(() => {
          this.refreshing = null;
        });
    }
    return this.refreshing;
  }

  /**
   * A serving thread's store lookup of `prefix`, begun at `startedAt`, read `record` (the main
   * thread calls this before it answers the thread). When that thread is about to refuse the key
   * (revoked, expired or malformed in the store, or gone from it while the key set here holds it)
   * another thread may still hold it as valid: from its own lookup, or from a listing read before
   * the revocation. So a listing read after the lookup began is installed and sent to every thread
   * first (onListing), and a refusal by one thread is every thread's (it was not: a thread that
   * met a revoked key first by a lookup refused it while another answered it until the next
   * listing, up to a second later). A failed listing is logged; the next one carries it.
   */
  async afterLookup(prefix: string, record: KeyRecord | null, startedAt: number, now = Date.now()): Promise<void> {
    let refused: boolean;
    if (record === null) {
      const held = this.keys.get(prefix);
      refused = held !== undefined && !held.revoked && now < held.expiresAt;
    } else {
      const cached = cachedOrProblem(record);
      refused = typeof cached === 'string' || cached.revoked || now >= cached.expiresAt;
    }
    if (!refused) return;
    try {
      // a read under way may have begun before the lookup (or in its millisecond), and missed what
      // it saw: wait for it, then read anew
      while (this.refreshing !== null && this.refreshStartedAt <= startedAt) await this.refreshing.catch(() => {});
      await this.refresh();
    } catch (err) {
      this.logger.warn(
        { err: (err as Error).message, key_prefix: prefix },
        'keys: cannot read the keys after a lookup of a refused key; the next refresh sends them to every thread',
      );
    }
  }

  /**
   * Replaces the key set with a listing read by `refresh` here or in another thread. A key missing
   * from it is dropped, unless it was looked up after the listing began (it is new, not lost).
   */
  install({ records, startedAt }: KeyListing): void {
    const next = new Map<string, CachedKey>();
    const malformed: string[] = [];
    for (const r of records) {
      const cached = cachedOrProblem(r);
      if (typeof cached === 'string') {
        malformed.push(cached);
        // refused, and no store lookup for its prefix a request
        if (typeof r?.prefix === 'string') next.set(r.prefix, REFUSED);
      } else next.set(r.prefix, cached);
    }
    this.reportMalformed(malformed);
    // The store is the truth. Keys are revoked, never deleted, so a key that vanished means the
    // store lost data (a Redis restarted empty): it is refused from now on, as a server started
    // now would refuse it, and as it could no longer be listed or revoked. (It used to be kept
    // as last known: the fleet then disagreed, and a leaked key stayed valid until restarts.)
    const lost: string[] = [];
    for (const [prefix, key] of this.keys) {
      if (next.has(prefix)) continue;
      // A key looked up while this listing was read is new, not lost.
      if (key.lookedUpAt >= startedAt) next.set(prefix, key);
      else lost.push(prefix);
    }
    if (lost.length > 0) {
      this.logger.warn(
        { key_prefixes: lost },
        'keys: keys no longer in the store (deleted, or a store that lost its data): refused from now on',
      );
    }
    this.keys = next;
    this.loaded = true;
  }

  /** Records whose problems were logged, so that a refresh a second does not repeat them. */
  private malformedLogged = new Set<string>();

  /** Logs the malformed records not logged yet (each refused: it cannot be checked). */
  private reportMalformed(problems: string[]): void {
    const fresh = problems.filter((p) => !this.malformedLogged.has(p));
    if (fresh.length === 0) return;
    for (const p of fresh) this.malformedLogged.add(p);
    this.logger.warn(
      { records: fresh },
      'keys: malformed key records in the store are refused; the other keys are served (fix or revoke them)',
    );
  }

  /**
   * Checks an Authorization header value: well-formed, known, secret matching in constant time,
   * not revoked, not expired. Records last use on success.
   */
  authenticate(authorization: string, now = Date.now(), allowLookup = true): AuthResult {
    this.beforeAuthenticate?.();
    const token = bearerToken(authorization);
    const parts = token === null ? null : parseKey(token);
    if (parts === null) return { ok: false, prefix: null };
    const cached = this.keys.get(parts.prefix);
    const digest = sha256(parts.secret);
    // Same work whether or not the prefix exists.
    const equal = this.compare(digest, cached ? cached.digest : DUMMY_DIGEST);
    if (!cached) {
      if (!allowLookup) {
        const failedAt = this.lookupFailures.get(parts.prefix);
        if (failedAt !== undefined && now - failedAt < LOOKUP_FAILURE_MS)
          return { ok: false, prefix: parts.prefix, unavailable: true };
      }
      const lookup = allowLookup ? this.lookup(parts.prefix, now) : null;
      return lookup ? { ok: false, prefix: parts.prefix, lookup } : { ok: false, prefix: parts.prefix };
    }
    if (!equal || cached.revoked || now >= cached.expiresAt) return { ok: false, prefix: parts.prefix };
    this.lastUsed.set(parts.prefix, now);
    return { ok: true, principal: cached.principal, hasRequiredScopes: cached.hasRequiredScopes };
  }

  /**
   * One store read of `prefix`, shared by concurrent callers; null when no lookup is due: the
   * prefix is a recent miss, too many are in flight, or the rate limit is spent (then: 401).
   */
  private lookup(prefix: string, now: number): Promise<void> | null {
    const pending = this.lookups.get(prefix);
    if (pending) return pending;
    const missUntil = this.misses.get(prefix);
    if (missUntil !== undefined) {
      if (now < missUntil) return null;
      this.misses.delete(prefix);
    }
    if (this.lookups.size >= MAX_LOOKUPS_IN_FLIGHT || !this.takeLookupToken(now)) return null;
    const done = Promise.resolve()
      .then(() => this.store.getKey(prefix, { lastUses: false }))
      .then(
        (record) => {
          this.lookupFailures.delete(prefix);
          if (record === null || record.prefix !== prefix) {
            if (this.misses.size >= MAX_MISSES) this.misses.delete(this.misses.keys().next().value!);
            this.misses.set(prefix, Date.now() + this.missTtlMs);
            return;
          }
          // Into the live map: a refresh that read the list before this key existed keeps it (see refresh).
          const cached = cachedOrProblem(record);
          if (typeof cached === 'string') this.reportMalformed([cached]);
          this.keys.set(prefix, { ...(typeof cached === 'string' ? REFUSED : cached), lookedUpAt: Date.now() });
        },
        // A store that cannot answer: the requests that waited for it are told the key cannot be
        // checked now (503; it was 401, which says the key is bad); a later one may look again.
        (err) => {
          this.lookupFailures.delete(prefix);
          if (this.lookupFailures.size >= MAX_MISSES)
            this.lookupFailures.delete(this.lookupFailures.keys().next().value!);
          this.lookupFailures.set(prefix, Date.now());
          this.logger.debug(
            { err: (err as Error)?.message, key_prefix: prefix },
            'keys: lookup of an unknown prefix failed',
          );
        },
      )
      .finally(() => this.lookups.delete(prefix));
    this.lookups.set(prefix, done);
    return done;
  }

  // Token bucket over all prefixes: `lookupRate` a second, bursts of as many.
  private takeLookupToken(now: number): boolean {
    return this.lookupLimiter.take(LOOKUP_BUCKET, now).ok;
  }

  /**
   * Adds last_used_at values collected elsewhere (a stopping serving thread's) to the next flush;
   * the newer of two values for a key wins.
   */
  noteUses(uses: Map<string, string>): void {
    for (const [prefix, iso] of uses) {
      const at = Date.parse(iso);
      if (Number.isFinite(at) && !((this.lastUsed.get(prefix) ?? -Infinity) >= at)) this.lastUsed.set(prefix, at);
    }
  }

  /** Writes the collected last_used_at values in one batch; failures only log (it is best effort). */
  /**
   * Writes the last uses noted since the last flush. While one is still being written, a call
   * waits for it and writes nothing (what was noted meanwhile goes with the next): flushes every
   * 5 s on a store slower than that piled up, each waiting on the one before (a review).
   */
  async flush(): Promise<void> {
    if (this.flushing !== null) return this.flushing;
    if (this.lastUsed.size === 0) return;
    const batch = new Map<string, string>();
    for (const [prefix, at] of this.lastUsed) batch.set(prefix, new Date(at).toISOString());
    this.lastUsed = new Map();
    this.flushing = this.store
      .touchKeys(batch)
      .catch((err: unknown) => {
        this.logger.warn({ err: (err as Error).message, keys: batch.size }, 'keys: last_used_at flush failed');
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  /** The flush being written, if any. */
  private flushing: Promise<void> | null = null;

  /** Stops the timers and flushes what is pending (after the flush under way, if any). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.flushing;
    await this.flush();
  }
}

/** A record that cannot be checked: refused like a revoked key. */
const REFUSED: CachedKey = {
  digest: DUMMY_DIGEST,
  revoked: true,
  expiresAt: -Infinity,
  lookedUpAt: 0,
  hasRequiredScopes: false,
  principal: { prefix: '', organizationIds: new Set(), scopes: new Set() },
};

/** The cached form of a stored record, or "prefix: field: problem" when its shape is wrong. */
function cachedOrProblem(r: KeyRecord): CachedKey | string {
  const problem = keyRecordProblem(r);
  if (problem === null) return toCached(r);
  const prefix = typeof r?.prefix === 'string' ? r.prefix : '(no prefix)';
  return `${prefix}: ${problem}`;
}

function toCached(r: KeyRecord): CachedKey {
  const expires = r.expires_at === null ? Infinity : Date.parse(r.expires_at);
  let digest = Buffer.from(r.hash, 'hex');
  // A corrupt hash must never match, and timingSafeEqual needs equal lengths.
  const revoked = r.revoked_at !== null || digest.length !== 32;
  if (digest.length !== 32) digest = DUMMY_DIGEST;
  return {
    digest,
    revoked,
    expiresAt: Number.isNaN(expires) ? -Infinity : expires,
    lookedUpAt: 0,
    hasRequiredScopes: REQUIRED_SCOPES.every((s) => r.scopes.includes(s)),
    principal: {
      prefix: r.prefix,
      organizationIds: new Set(r.organization_ids.map((o) => o.toLowerCase())),
      scopes: new Set(r.scopes),
    },
  };
}
