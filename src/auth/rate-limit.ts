/**
 * Per-key token buckets (`RATE_LIMIT_RPS` tokens a second, at most `RATE_LIMIT_BURST` stored).
 *
 * Memory stays bounded: a bucket that has refilled to the burst is the same as no bucket, so a
 * sweep (at most every `sweepMs`, and whenever the map grows past `maxBuckets`) drops every full
 * bucket without changing any answer. If more than `maxBuckets` keys are all active at once, the
 * least recently created buckets are dropped (those keys get a fresh, full bucket: more permissive,
 * never stricter).
 */
export interface RateLimitOptions {
  /** tokens added per second, > 0 */
  rps: number;
  /** bucket capacity, >= 1 */
  burst: number;
  /** hard cap on the number of buckets kept (default 10,000) */
  maxBuckets?: number;
  /** minimum time between two sweeps of full buckets (default 10 s) */
  sweepMs?: number;
  /** clock in ms (tests inject one) */
  now?: () => number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  /** ms of the last refill */
  at: number;
}

export class RateLimiter {
  readonly rps: number;
  readonly burst: number;
  private readonly maxBuckets: number;
  private readonly sweepMs: number;
  private readonly now: () => number;
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(opts: RateLimitOptions) {
    if (!(opts.rps > 0) || !Number.isFinite(opts.rps)) throw new Error('rate limit: rps must be a positive number');
    if (!(opts.burst >= 1) || !Number.isFinite(opts.burst)) throw new Error('rate limit: burst must be at least 1');
    this.rps = opts.rps;
    this.burst = opts.burst;
    this.maxBuckets = opts.maxBuckets ?? 10_000;
    this.sweepMs = opts.sweepMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    this.lastSweep = this.now();
  }

  /** Number of buckets held (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes one token of `key`'s bucket, or says how many whole seconds until one is available. */
  take(key: string): RateDecision {
    const now = this.now();
    if (now - this.lastSweep >= this.sweepMs) this.sweep(now);
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.maxBuckets) this.makeRoom(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    } else {
      this.refill(b, now);
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.rps)) };
  }

  /** Drops every bucket that is full again (lossless). */
  sweep(now = this.now()): void {
    this.lastSweep = now;
    for (const [key, b] of this.buckets) {
      this.refill(b, now);
      if (b.tokens >= this.burst) this.buckets.delete(key);
    }
  }

  private refill(b: Bucket, now: number): void {
    const elapsed = now - b.at;
    if (elapsed > 0) {
      b.tokens = Math.min(this.burst, b.tokens + (elapsed / 1000) * this.rps);
      b.at = now;
    }
  }

  /** Sweeps; if every bucket is still in use, drops the oldest tenth (Map order is creation order). */
  private makeRoom(now: number): void {
    this.sweep(now);
    if (this.buckets.size < this.maxBuckets) return;
    let drop = Math.max(1, Math.floor(this.maxBuckets / 10));
    for (const key of this.buckets.keys()) {
      this.buckets.delete(key);
      if (--drop === 0) break;
    }
  }
}
