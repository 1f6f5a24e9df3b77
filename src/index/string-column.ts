// what JSON.stringify escapes in a well-formed string: '"', '\\' and C0 controls
// biome-ignore lint/suspicious/noControlCharactersInRegex: C0 controls are what JSON escapes, on purpose
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

// ES2024 (V8 11.1, in Node 20), not yet in this TypeScript's lib
declare global {
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/**
 * The text between the quotes of `JSON.stringify(s)`: what the response carries for a string, the
 * imported value echoed. A lone surrogate (only a `\ud800` escape in an import line can make one:
 * raw invalid UTF-8 is refused) stays the escape JSON.stringify writes; it used to become U+FFFD,
 * so `"x\ud800"` came back as `"x\ufffd"`, not as imported.
 */
export function jsonEscaped(s: string): string {
  return NEEDS_ESCAPE.test(s) || !s.isWellFormed() ? JSON.stringify(s).slice(1, -1) : s;
}

/**
 * Many strings as one UTF-8 byte array plus offsets: string i is bytes[offsets[i] ..
 * offsets[i+1]). Two typed arrays instead of millions of JS strings, so an index moves between
 * threads without copying and costs 4 bytes a string beyond its text.
 */
/** The most bytes a column holds: its offsets are Uint32 (and a Buffer holds 4 GiB at most). */
export const MAX_COLUMN_BYTES = 0xffffffff;

/** A push past MAX_COLUMN_BYTES (the caller names the organization: OrgDataBuilder). */
export class ColumnFull extends Error {
  constructor() {
    super('index: more than 4 GiB (2^32 - 1 bytes) of text in one column');
    this.name = 'ColumnFull';
  }
}

export class StringColumnBuilder {
  // small to start with (a builder an organization, a column a read block), doubled as needed
  private bytes = Buffer.allocUnsafe(1 << 12);
  private length = 0;
  private offsets = new Uint32Array(256);
  private count = 0;

  push(s: string): void {
    // an upper bound (3 bytes a UTF-16 unit), so the string is encoded once, not measured first;
    // measured only when the bound does not fit (growth, or a column near its 4 GiB limit)
    const bound = s.length * 3;
    this.room(this.length + bound > this.bytes.length ? Buffer.byteLength(s, 'utf8') : bound);
    this.offsets[this.count++] = this.length;
    this.length += this.bytes.write(s, this.length, 'utf8');
  }

  /**
   * codes[from, to) (UTF-16 code units) as one more string when every unit is printable ASCII
   * that JSON does not escape, so its escaped UTF-8 is the units themselves; returns false,
   * pushing nothing, otherwise (the caller escapes the string: jsonEscaped).
   */
  pushPlain(codes: Uint16Array, from: number, to: number): boolean {
    for (let k = from; k < to; k++) {
      const c = codes[k];
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
    }
    this.room(to - from);
    const bytes = this.bytes;
    let at = this.length;
    this.offsets[this.count++] = at;
    for (let k = from; k < to; k++) bytes[at++] = codes[k];
    this.length = at;
    return true;
  }

  /** bytes[from, to) of another column, as one more string (already escaped and encoded). */
  pushBytes(bytes: Buffer, from: number, to: number): void {
    this.room(to - from);
    this.offsets[this.count++] = this.length;
    this.length += bytes.copy(this.bytes, this.length, from, to);
  }

  /**
   * Strings from .. to - 1 of another column (its bytes and offsets), already escaped and encoded,
   * as one copy: a Buffer#copy a string cost ~0.5 µs of call overhead (2.9 s of a 10M import).
   */
  pushRun(bytes: Uint8Array, offsets: Uint32Array, from: number, to: number): void {
    const start = offsets[from],
      end = offsets[to];
    this.room(end - start, to - from);
    const shift = this.length - start;
    for (let k = from; k < to; k++) this.offsets[this.count++] = offsets[k] + shift;
    this.bytes.set(bytes.subarray(start, end), this.length);
    this.length += end - start;
  }

  /** Bytes held. */
  get byteLength(): number {
    return this.length;
  }

  /**
   * Room for `strings` more strings of `bytes` bytes in all, made at once: a column about to take
   * a known amount (the import's second part) grows once instead of doubling several times, each
   * doubling a copy of everything so far (3.8 s of copies at 10M). Memory not yet written is not
   * resident.
   */
  reserve(bytes: number, strings: number): void {
    // (a guess, 5% over: never past the limit itself, which only text that is there may reach)
    this.room(Math.min(bytes, MAX_COLUMN_BYTES - this.length), strings);
  }

  /** Room for `strings` more strings of `need` bytes in all, their offsets and the closing one. */
  private room(need: number, strings = 1): void {
    if (this.length + need > this.bytes.length) {
      if (this.length + need > MAX_COLUMN_BYTES) throw new ColumnFull();
      // doubling stops at the limit: from 2 GiB it asked for 4 and threw with 2 GiB of text (an audit)
      const size = Math.min(MAX_COLUMN_BYTES, Math.max(this.bytes.length * 2, this.length + need));
      const next = Buffer.allocUnsafe(size);
      this.bytes.copy(next, 0, 0, this.length);
      this.bytes = next;
    }
    if (this.count + strings >= this.offsets.length) {
      const next = new Uint32Array(Math.max(this.offsets.length * 2, this.count + strings + 1));
      next.set(this.offsets);
      this.offsets = next;
    }
  }

  /**
   * The bytes and count + 1 offsets as views of the growable storage, no copy: valid until the
   * next push (the build reads a column it permutes through this).
   */
  view(): { bytes: Buffer; offsets: Uint32Array } {
    // room() keeps a slot past the last offset
    this.offsets[this.count] = this.length;
    return { bytes: this.bytes.subarray(0, this.length), offsets: this.offsets.subarray(0, this.count + 1) };
  }

  /** The bytes (an exact-size copy, not a view of the growable buffer) and count + 1 offsets. */
  build(): { bytes: Uint8Array; offsets: Uint32Array } {
    const bytes = new Uint8Array(this.length);
    bytes.set(this.bytes.subarray(0, this.length));
    const offsets = this.offsets.slice(0, this.count + 1);
    offsets[this.count] = this.length;
    return { bytes, offsets };
  }
}
