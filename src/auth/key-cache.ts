import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { KeyRecord, Store } from '../store/store.js';
import { bearerToken, parseKey, REQUIRED_SCOPES } from './api-key.js';

/** What the endpoint needs to know about an authenticated key. */
export interface Principal {
  prefix: string;
  organizationIds: ReadonlySet<string>;
  scopes: ReadonlySet<string>;
}

export type AuthResult =
  | { ok: true; principal: Principal; hasRequiredScopes: boolean }
  | { ok: false; prefix: string | null };

interface CachedKey {
  digest: Buffer;
  principal: Principal;
  revoked: boolean;
  /** epoch ms, or Infinity */
  expiresAt: number;
}

// Compared against when the prefix is unknown, so unknown and wrong-secret keys cost the same.
const DUMMY_DIGEST = createHash('sha256').update('no such key').digest();

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
}

/**
 * All API keys in memory, re-read from the store every second, so a request never waits on the
 * store; `last_used_at` is collected in memory and written in batches.
 */
export class KeyCache {
  private keys = new Map<string, CachedKey>();
  private lastUsed = new Map<string, string>();
  private loaded = false;
  private refreshing: Promise<void> | null = null;
  private warnedLost = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly refreshMs: number;
  private readonly flushMs: number;
  private readonly compare: (a: Buffer, b: Buffer) => boolean;

  constructor(store: Store, opts: KeyCacheOptions) {
    this.store = store;
    this.logger = opts.logger;
    this.refreshMs = opts.refreshMs ?? 1000;
    this.flushMs = opts.flushMs ?? 5000;
    this.compare = opts.compare ?? timingSafeEqual;
  }

  /** True once the first read of the keys succeeded. */
  get ready(): boolean {
    return this.loaded;
  }

  /** Loads the keys once (rejects on failure) and starts the refresh and flush timers. */
  async start(): Promise<void> {
    await this.refresh();
    const r = setInterval(() => {
      this.refresh().catch((err) => this.logger.warn({ err: (err as Error).message }, 'keys: refresh failed, serving the previous key set'));
    }, this.refreshMs);
    const f = setInterval(() => void this.flush(), this.flushMs);
    r.unref();
    f.unref();
    this.timers.push(r, f);
  }

  /** Re-reads every key from the store; concurrent calls share one read. */
  refresh(): Promise<void> {
    if (!this.refreshing) {
      this.refreshing = this.store
        .listKeys()
        .then((records) => {
          const next = new Map(records.map((r) => [r.prefix, toCached(r)]));
          // Keys are revoked, never deleted: a key that vanished means the store lost data (a
          // Redis restarted empty). Keep serving it as last known rather than lock everyone out.
          const lost: string[] = [];
          for (const [prefix, key] of this.keys) {
            if (!next.has(prefix)) {
              next.set(prefix, key);
              lost.push(prefix);
            }
          }
          if (lost.length > 0 && !this.warnedLost) {
            this.logger.warn({ key_prefixes: lost }, 'keys: keys missing from the store, keeping their last known records');
          }
          this.warnedLost = lost.length > 0;
          this.keys = next;
          this.loaded = true;
        })
        .finally(() => {
          this.refreshing = null;
        });
    }
    return this.refreshing;
  }

  /**
   * Checks an Authorization header value: well-formed, known, secret matching in constant time,
   * not revoked, not expired. Records last use on success.
   */
  authenticate(authorization: string, now = Date.now()): AuthResult {
    const token = bearerToken(authorization);
    const parts = token === null ? null : parseKey(token);
    if (parts === null) return { ok: false, prefix: null };
    const cached = this.keys.get(parts.prefix);
    const digest = createHash('sha256').update(parts.secret, 'utf8').digest();
    // Same work whether or not the prefix exists.
    const equal = this.compare(digest, cached ? cached.digest : DUMMY_DIGEST);
    if (!cached || !equal || cached.revoked || now >= cached.expiresAt) return { ok: false, prefix: parts.prefix };
    this.lastUsed.set(parts.prefix, new Date(now).toISOString());
    const scopes = cached.principal.scopes;
    return { ok: true, principal: cached.principal, hasRequiredScopes: REQUIRED_SCOPES.every((s) => scopes.has(s)) };
  }

  /** Writes the collected last_used_at values in one batch; failures only log (it is best effort). */
  async flush(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const batch = this.lastUsed;
    this.lastUsed = new Map();
    try {
      await this.store.touchKeys(batch);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, keys: batch.size }, 'keys: last_used_at flush failed');
    }
  }

  /** Stops the timers and flushes what is pending. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.flush();
  }
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
    principal: {
      prefix: r.prefix,
      organizationIds: new Set(r.organization_ids.map((o) => o.toLowerCase())),
      scopes: new Set(r.scopes),
    },
  };
}
