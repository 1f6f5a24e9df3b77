/**
 * A set of strings that may exceed the 2^24 entries one JS Set can hold (an organization of
 * 10M+ messages): entries are spread over 64 Sets by a cheap hash of the last characters.
 */
export class IdSet {
  private readonly shards: Set<string>[] = Array.from({ length: 64 }, () => new Set<string>());

  /** Adds `id`; returns false when it was already present. */
  add(id: string): boolean {
    const n = id.length;
    const h = n === 0 ? 0 : (id.charCodeAt(n - 1) * 31 + (n > 1 ? id.charCodeAt(n - 2) * 7 : 0) + n) & 63;
    const shard = this.shards[h];
    if (shard.has(id)) return false;
    shard.add(id);
    return true;
  }
}
