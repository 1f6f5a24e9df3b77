/**
 * Per-key token buckets (`RATE_LIMIT_RPS` tokens a second, at most `RATE_LIMIT_BURST` stored),
 * held in one `SharedArrayBuffer` so that every serving thread of the process takes from the same
 * buckets: N threads do not give a key N times its limit.
 *
 * Layout: a set-associative table. A key hashes to one group of `WAYS` slots; it only ever lives
 * in that group, so there are no tombstones and no probing across groups. Each group has an
 * `Int32` lock word taken with `Atomics.compareExchange`; the critical section is a few loads and
 * stores, never an await, so waiting threads spin briefly. The float fields are read and written
 * only under the group's lock, whose atomic operations order them between threads.
 *
 * Memory stays bounded (`maxBuckets` slots in all). A bucket that has refilled to the burst is the
 * same as no bucket, so a full group reuses such a slot first, and a sweep (at most every
 * `sweepMs`) empties them without changing any answer. If every slot of a group is in use, the
 * bucket refilled longest ago is dropped (that key gets a fresh, full bucket: more permissive,
 * never stricter).
 */
export interface RateLimitOptions {
  /** tokens added per second, > 0 */
  rps: number;
  /** bucket capacity, >= 1 */
  burst: number;
  /** hard cap on the number of buckets kept (default 10,000; at least 8) */
  maxBuckets?: number;
  /** minimum time between two sweeps of full buckets (default 10 s) */
  sweepMs?: number;
  /** clock in ms (tests inject one); the default, Date.now, is the same in every thread */
  now?: () => number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Slots a group: a key competes only with the keys that hash to its group. */
const WAYS = 8;
/** Spins before a lock is taken over: its holder died mid-section (a terminated thread). */
const MAX_SPINS = 1 << 20;

/** The shared memory of one limiter, passed to serving threads with `RateLimiter.attach`. */
export interface SharedRateLimit {
  rps: number;
  burst: number;
  maxBuckets: number;
  sweepMs: number;
  buffer: SharedArrayBuffer;
}

const OK: RateDecision = { ok: true };

export class RateLimiter {
  readonly rps: number;
  readonly burst: number;
  private readonly groups: number;
  private readonly sweepMs: number;
  private readonly now: () => number;
  private readonly shared: SharedRateLimit;
  /** [group locks ..., sweep lock] */
  private readonly locks: Int32Array;
  /** two words a slot: the key's identity; 0,0 is an empty slot */
  private readonly ids: Uint32Array;
  /** per slot: tokens, then ms of the last refill; then, last, the time of the last sweep */
  private readonly nums: Float64Array;

  constructor(opts: RateLimitOptions, buffer?: SharedArrayBuffer) {
    if (!(opts.rps > 0) || !Number.isFinite(opts.rps)) throw new Error('rate limit: rps must be a positive number');
    if (!(opts.burst >= 1) || !Number.isFinite(opts.burst)) throw new Error('rate limit: burst must be at least 1');
    const maxBuckets = Math.max(WAYS, Math.floor(opts.maxBuckets ?? 10_000));
    this.rps = opts.rps;
    this.burst = opts.burst;
    this.groups = Math.floor(maxBuckets / WAYS);
    this.sweepMs = opts.sweepMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    const slots = this.groups * WAYS;
    // Float64s first (8-byte aligned), then the id words, then the lock words.
    const numsBytes = (slots * 2 + 1) * 8;
    const idsBytes = slots * 2 * 4;
    const size = numsBytes + idsBytes + (this.groups + 1) * 4;
    const fresh = buffer === undefined;
    if (buffer !== undefined && buffer.byteLength !== size)
      throw new Error(`rate limit: shared buffer of ${buffer.byteLength} bytes, expected ${size}`);
    const sab = buffer ?? new SharedArrayBuffer(size);
    this.nums = new Float64Array(sab, 0, slots * 2 + 1);
    this.ids = new Uint32Array(sab, numsBytes, slots * 2);
    this.locks = new Int32Array(sab, numsBytes + idsBytes, this.groups + 1);
    if (fresh) this.nums[slots * 2] = this.now();
    this.shared = { rps: this.rps, burst: this.burst, maxBuckets, sweepMs: this.sweepMs, buffer: sab };
  }

  /** A limiter over the same buckets as the one that exported `shared` (another thread's). */
  static attach(shared: SharedRateLimit, now?: () => number): RateLimiter {
    return new RateLimiter(
      { rps: shared.rps, burst: shared.burst, maxBuckets: shared.maxBuckets, sweepMs: shared.sweepMs, now },
      shared.buffer,
    );
  }

  /** What another thread needs to take from the same buckets (structured-clone safe). */
  exportShared(): SharedRateLimit {
    return this.shared;
  }

  /** Number of buckets held (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (let s = 0; s < this.groups * WAYS; s++) if (this.ids[2 * s] !== 0 || this.ids[2 * s + 1] !== 0) n++;
    return n;
  }

  /**
   * Takes one token of `key`'s bucket, or says how many whole seconds until one is available.
   * `now` is for a caller that already read the clock (the key cache).
   */
  take(key: string, now = this.now()): RateDecision {
    const sweepAt = this.groups * WAYS * 2;
    if (now - this.nums[sweepAt] >= this.sweepMs) this.trySweep(now);
    const id0 = idHigh(key);
    const id1 = idLow(key, id0);
    const g = (Math.imul(id0 ^ id1, 0x9e3779b1) >>> 0) % this.groups;
    this.lock(g);
    try {
      const slot = this.slotOf(g, id0, id1, now);
      const t = 2 * slot;
      let tokens = this.nums[t];
      const elapsed = now - this.nums[t + 1];
      if (elapsed > 0) {
        tokens = Math.min(this.burst, tokens + (elapsed / 1000) * this.rps);
        this.nums[t + 1] = now;
      }
      if (tokens >= 1) {
        this.nums[t] = tokens - 1;
        return OK;
      }
      this.nums[t] = tokens;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.rps)) };
    } finally {
      this.unlock(g);
    }
  }

  /** Empties every bucket that is full again (lossless). */
  sweep(now = this.now()): void {
    this.nums[this.groups * WAYS * 2] = now;
    for (let g = 0; g < this.groups; g++) {
      this.lock(g);
      for (let s = g * WAYS; s < (g + 1) * WAYS; s++)
        if (this.isFull(s, now)) this.ids[2 * s] = this.ids[2 * s + 1] = 0;
      this.unlock(g);
    }
  }

  /** One thread sweeps at a time; the others go on (the sweep changes no answer). */
  private trySweep(now: number): void {
    if (Atomics.compareExchange(this.locks, this.groups, 0, 1) !== 0) return;
    try {
      if (now - this.nums[this.groups * WAYS * 2] >= this.sweepMs) this.sweep(now);
    } finally {
      Atomics.store(this.locks, this.groups, 0);
    }
  }

  /** The slot of key (id0, id1) in group g: its own, else an empty one, a full one, the stalest. */
  private slotOf(g: number, id0: number, id1: number, now: number): number {
    const ids = this.ids;
    let free = -1;
    let stalest = -1;
    for (let s = g * WAYS; s < (g + 1) * WAYS; s++) {
      const a = ids[2 * s];
      const b = ids[2 * s + 1];
      if (a === id0 && b === id1) return s;
      if (free >= 0) continue;
      if ((a === 0 && b === 0) || this.isFull(s, now)) free = s;
      else if (stalest < 0 || this.nums[2 * s + 1] < this.nums[2 * stalest + 1]) stalest = s;
    }
    const s = free >= 0 ? free : stalest;
    ids[2 * s] = id0;
    ids[2 * s + 1] = id1;
    this.nums[2 * s] = this.burst;
    this.nums[2 * s + 1] = now;
    return s;
  }

  private isFull(s: number, now: number): boolean {
    return this.nums[2 * s] + ((now - this.nums[2 * s + 1]) / 1000) * this.rps >= this.burst;
  }

  private lock(g: number): void {
    let spins = 0;
    while (Atomics.compareExchange(this.locks, g, 0, 1) !== 0) {
      if (++spins === MAX_SPINS) {
        // The holder was terminated inside its few instructions: take the lock over.
        Atomics.store(this.locks, g, 0);
        spins = 0;
      }
    }
  }

  private unlock(g: number): void {
    Atomics.store(this.locks, g, 0);
  }
}

/**
 * A key's identity as two 32-bit words, never both 0. Keys of up to 4 + 4 ASCII characters (an API
 * key prefix is 8 of [a-z0-9]) are packed exactly, with bit 31 of the first word set; longer ones
 * are hashed (two FNV-1a variants, 64 bits) with bit 31 clear.
 */
function idHigh(key: string): number {
  if (key.length <= 8 && isAscii(key)) {
    let w = 0;
    for (let i = 0; i < 4 && i < key.length; i++) w |= key.charCodeAt(i) << (8 * i);
    return (w | 0x80000000) >>> 0;
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h & 0x7fffffff) >>> 0;
}

function idLow(key: string, high: number): number {
  if (high >= 0x80000000) {
    let w = 0;
    for (let i = 4; i < key.length; i++) w |= key.charCodeAt(i) << (8 * (i - 4));
    return w >>> 0;
  }
  let h = 0x050c5d1f;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) ^ (h >>> 15);
  return (h | 1) >>> 0;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
