/**
 * `a`'s first `used` values (all by default) at the start of a new array of its type, `length`
 * long. Only they are copied: capacity never written stays untouched, out of the RSS.
 */
export function grown<T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(
  a: T,
  length: number,
  used = a.length,
): T {
  const next = new (a.constructor as new (length: number) => T)(length);
  next.set(used === a.length ? a : (a.subarray(0, used) as T));
  return next;
}

/** A Uint32Array that grows by doubling: a column whose final length is not known in advance. */
export class Growable {
  buf: Uint32Array;
  length = 0;
  constructor(capacity: number) {
    this.buf = new Uint32Array(Math.max(16, capacity));
  }
  push(v: number): void {
    if (this.length === this.buf.length) this.grow(this.length + 1);
    this.buf[this.length++] = v;
  }
  /** Room for `n` more values; returns the buffer to write them into from `length` on. */
  room(n: number): Uint32Array {
    if (this.length + n > this.buf.length) this.grow(this.length + n);
    return this.buf;
  }
  /** Room for `n` more values made at once (see StringColumnBuilder.reserve). */
  reserve(n: number): void {
    if (this.length + n > this.buf.length) this.grow(this.length + n);
  }
  toArray(): Uint32Array {
    return this.buf.slice(0, this.length);
  }
  private grow(min: number): void {
    this.buf = grown(this.buf, Math.max(this.buf.length * 2, min), this.length);
  }
}
