/**
 * The 200 body is written as UTF-8 bytes straight into one output buffer per thread: fixed JSON
 * pieces as constants, strings copied from the index's pre-escaped columns, numbers and
 * timestamps written digit by digit. No per-message object, no JSON.stringify, no string decoding.
 * The bytes handed out are valid until the next body is written on this thread; the HTTP layer
 * copies them (uWS copies what it sends, and the backpressure path takes its own copy).
 */

import { HEX_PAIRS } from '../index/packed-uuid.js';
import { MILLI_BITS, MILLI_MASK, SENT_BLOCK_SHIFT, type SentTimes } from '../index/sent-times.js';
import { civilFromDays } from '../time/civil-date.js';

const DAY = 86400; // seconds
const PER_DAY = 1 / DAY;
const ISO_MIN = -62167219200000; // 0000-01-01T00:00:00.000Z
const ISO_MAX = 253402300799999; // 9999-12-31T23:59:59.999Z
const ISO_MIN_SECONDS = ISO_MIN / 1000;
const ISO_MAX_SECONDS = Math.floor(ISO_MAX / 1000);
const ZERO = 48;
/** one instant as sent times, for iso() */
const ONE: SentTimes = {
  msgSentBlock: new Float64Array(1),
  msgSentLow: new Uint32Array(1),
  msgSentFar: new Float64Array(0),
};
const DASH = 0x2d;

/**
 * Bytes the writer copies: a DataView, read and written 4 bytes at a time (unaligned). A byte loop
 * over a Uint8Array that arrives as a parameter ran at 3-4 ns a byte here (V8 reloads the array's
 * base and length every byte); 4-byte DataView moves copy a 46-byte content in ~46 ns, 4× less,
 * and allocate nothing (TypedArray#set needs a subarray view a copy; measured 130-220 ns each).
 */
export type Bytes = DataView;

/** A DataView over a Uint8Array's bytes (made once per column, not per copy). */
export function bytesOf(u: Uint8Array): Bytes {
  return new DataView(u.buffer, u.byteOffset, u.byteLength);
}

/**
 * A constant JSON piece: its bytes as float64 words of 8 bytes (the last one padded) and how many
 * bytes. raw() stores the words, up to 7 bytes past the piece that the next write overwrites: no
 * source to read per byte, and a few stores for the body's commonest writes (a DataView copy of
 * each piece cost ~15 ns, 1,000 of them a page of 50 items). The pieces are ASCII, so no word is
 * a NaN (see slice); a float64 store of 8 bytes halves the 4-byte stores.
 */
export interface Piece {
  readonly words: Float64Array;
  readonly length: number;
}

/** UTF-8 bytes of a constant JSON piece. */
export function utf8(s: string): Piece {
  const bytes = Buffer.from(s, 'utf8');
  const padded = new Uint8Array((bytes.length + 7) & ~7);
  padded.set(bytes);
  const view = bytesOf(padded);
  const words = new Float64Array(padded.length >>> 3);
  for (let i = 0; i < words.length; i++) words[i] = view.getFloat64(8 * i, true);
  return { words, length: bytes.length };
}

/** Bytes past a reservation that raw() may store into (its padding), kept free at the buffer's end. */
const SLACK = 8;

export class BodyWriter {
  buf: Buffer = Buffer.allocUnsafe(1 << 20);
  dv: DataView = bytesOf(this.buf);
  pos = 0;

  reset(): void {
    this.pos = 0;
  }

  /** Room for n more bytes (callers reserve an upper bound before a group of writes). */
  reserve(n: number): void {
    if (this.pos + n + SLACK <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n + SLACK));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.dv = bytesOf(next);
  }

  /** A constant piece (reserved by the caller). */
  raw(piece: Piece): void {
    const dv = this.dv;
    const words = piece.words;
    const p = this.pos;
    for (let i = 0; i < words.length; i++) dv.setFloat64(p + 8 * i, words[i], true);
    this.pos = p + piece.length;
  }

  /**
   * bytes[from, to) of a column (reserved by the caller), 8 bytes a move as float64 loads and
   * stores: ~23% less time a byte than 4-byte moves (0.32 -> 0.25 ns measured on scattered
   * 16-96 byte strings). A float64 move keeps every bit on x64 (no arithmetic touches it), and the
   * columns hold valid UTF-8, which never forms a NaN besides: the top byte of a NaN is 0x7f or
   * 0xff, 0xff is never in UTF-8, and 0x7f after a byte >= 0xf0 (a 4-byte lead) is not either.
   */
  slice(bytes: Bytes, from: number, to: number): void {
    const dv = this.dv;
    const start = this.pos;
    const n = to - from;
    this.pos = start + n;
    if (n <= 16) {
      // two moves overlapping in the middle (not a byte loop of 0-7 turns: its unpredictable
      // exit cost as much as the moves, 40 -> 23 ns a copy measured with 4-byte words)
      if (n >= 8) {
        const a = bytes.getFloat64(from, true),
          b = bytes.getFloat64(to - 8, true);
        dv.setFloat64(start, a, true);
        dv.setFloat64(start + n - 8, b, true);
      } else if (n >= 4) {
        const a = bytes.getUint32(from, true),
          b = bytes.getUint32(to - 4, true);
        dv.setUint32(start, a, true);
        dv.setUint32(start + n - 4, b, true);
      } else for (let k = 0; k < n; k++) dv.setUint8(start + k, bytes.getUint8(from + k));
      return;
    }
    // 16 bytes a turn, two loads then two stores, and the last 16 bytes again overlapping
    // (n > 16, so the last turn's start, to - 16, is after from)
    const last = to - 16;
    for (let i = from, p = start; ; i += 16, p += 16) {
      if (i > last) {
        i = last;
        p = start + n - 16;
      }
      const a = bytes.getFloat64(i, true),
        b = bytes.getFloat64(i + 8, true);
      dv.setFloat64(p, a, true);
      dv.setFloat64(p + 8, b, true);
      if (i === last) return;
    }
  }

  /**
   * The text of the packed id at bytes[at, at + 17) (index/packed-uuid.ts; reserved by the
   * caller: 36 bytes): its 16 bytes read 4 at a time, four hex digits a 32-bit store, unrolled.
   * About twice a 36-byte copy (45-48 ns against 24-26 for slice(), measured alone; a loop of
   * byte stores took 110).
   */
  uuid(bytes: Bytes, at: number): void {
    const dv = this.dv;
    const p = this.pos;
    const h = HEX_PAIRS;
    const c = (bytes.getUint8(at) & 1) << 8;
    // four digits a 32-bit store (little-endian: the first byte's pair in the low half)
    let w = bytes.getUint32(at + 1);
    dv.setUint32(p, h[c | (w >>> 24)] | (h[c | ((w >>> 16) & 255)] << 16), true);
    dv.setUint32(p + 4, h[c | ((w >>> 8) & 255)] | (h[c | (w & 255)] << 16), true);
    w = bytes.getUint32(at + 5);
    dv.setUint8(p + 8, DASH);
    dv.setUint32(p + 9, h[c | (w >>> 24)] | (h[c | ((w >>> 16) & 255)] << 16), true);
    dv.setUint8(p + 13, DASH);
    dv.setUint32(p + 14, h[c | ((w >>> 8) & 255)] | (h[c | (w & 255)] << 16), true);
    w = bytes.getUint32(at + 9);
    dv.setUint8(p + 18, DASH);
    dv.setUint32(p + 19, h[c | (w >>> 24)] | (h[c | ((w >>> 16) & 255)] << 16), true);
    dv.setUint8(p + 23, DASH);
    dv.setUint32(p + 24, h[c | ((w >>> 8) & 255)] | (h[c | (w & 255)] << 16), true);
    w = bytes.getUint32(at + 13);
    dv.setUint32(p + 28, h[c | (w >>> 24)] | (h[c | ((w >>> 16) & 255)] << 16), true);
    dv.setUint32(p + 32, h[c | ((w >>> 8) & 255)] | (h[c | (w & 255)] << 16), true);
    this.pos = p + 36;
  }

  /** A JS string as UTF-8 (reserves it itself): for the small per-request echo. */
  text(s: string): void {
    this.reserve(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A string known to be ASCII, e.g. a validated UUID (reserved by the caller): no encoder call. */
  ascii(s: string): void {
    const buf = this.buf;
    const p = this.pos;
    for (let i = 0; i < s.length; i++) buf[p + i] = s.charCodeAt(i);
    this.pos = p + s.length;
  }

  /**
   * `JSON.stringify(list)` as UTF-8 (reserves it itself). Printable ASCII without a quote or a
   * backslash (most search terms once normalized) is the same bytes in JSON: written as it is,
   * without JSON.stringify or the encoder; any other character takes JSON.stringify whole.
   */
  jsonStrings(list: readonly string[]): void {
    let n = 2;
    for (let k = 0; k < list.length; k++) {
      const s = list[k];
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
          this.text(JSON.stringify(list));
          return;
        }
      }
      n += s.length + 3;
    }
    this.reserve(n);
    const buf = this.buf;
    buf[this.pos++] = 0x5b; // [
    for (let k = 0; k < list.length; k++) {
      if (k > 0) buf[this.pos++] = 0x2c; // ,
      buf[this.pos++] = 0x22;
      this.ascii(list[k]);
      buf[this.pos++] = 0x22;
    }
    buf[this.pos++] = 0x5d; // ]
  }

  /** A non-negative integer as JSON writes it (reserved: up to 16 bytes). */
  uint(n: number): void {
    if (!(n >= 0 && n <= 0x7fffffff) || n !== Math.floor(n)) {
      this.text(String(n));
      return;
    }
    // int32 from here, so each division by 10 compiles to a multiplication, not a float division
    let x = n | 0;
    const buf = this.buf;
    let digits = 1;
    for (let y = x; y >= 10; y = (y / 10) | 0) digits++;
    let p = this.pos + digits;
    this.pos = p;
    do {
      const q = (x / 10) | 0;
      buf[--p] = ZERO + x - q * 10;
      x = q;
    } while (x > 0);
  }

  /** `new Date(ms).toISOString()` as bytes (see isoAt). */
  iso(ms: number): void {
    if (!(ms >= ISO_MIN && ms <= ISO_MAX) || ms !== Math.floor(ms)) {
      this.text(new Date(ms).toISOString());
      return;
    }
    const seconds = Math.floor(ms / 1000);
    ONE.msgSentBlock[0] = seconds;
    ONE.msgSentLow[0] = ms - seconds * 1000;
    this.isoAt(ONE, 0);
  }

  /**
   * `toISOString()` of message o's sent_at (sent-times.ts) as bytes, without the Date (reserved:
   * up to 27 bytes). Years outside 0000-9999 take toISOString itself. The instant is read here,
   * not passed: a double argument to a call that is not inlined is boxed, garbage each time.
   */
  isoAt(times: SentTimes, o: number): void {
    // sentAtOf's reads, written out: a call that is not inlined returns the seconds (above the
    // small-integer range) boxed, and isoAt ran at 40 ns instead of 25
    const base = times.msgSentBlock[o >>> SENT_BLOCK_SHIFT],
      w = times.msgSentLow[o];
    let seconds: number, milli: number;
    if (!Number.isNaN(base)) {
      seconds = base + (w >>> MILLI_BITS);
      milli = w & MILLI_MASK;
    } else {
      // a far block (a NaN base): its instant whole
      const ms = times.msgSentFar[w];
      seconds = Math.floor(ms / 1000);
      milli = ms - seconds * 1000;
    }
    if (!(seconds >= ISO_MIN_SECONDS && seconds <= ISO_MAX_SECONDS)) {
      this.text(new Date(seconds * 1000 + milli).toISOString());
      return;
    }
    // a multiplication by 1 / DAY, corrected by one where it rounds across midnight: a division
    // costs several times more, and this runs for every timestamp of a page
    let days = Math.floor(seconds * PER_DAY);
    const since = seconds - days * DAY;
    if (since < 0) days--;
    else if (since >= DAY) days++;
    const dv = this.dv;
    const p = this.pos;
    // "YYYY-MM-DD" from a small direct-mapped cache: a page's timestamps share few days
    const slot = days & (DAY_CACHE - 1);
    if (cachedDay[slot] !== days) fillDay(days, slot);
    const from = slot * 10;
    dv.setUint32(p, dayView.getUint32(from, true), true);
    dv.setUint32(p + 4, dayView.getUint32(from + 4, true), true);
    dv.setUint16(p + 8, dayView.getUint16(from + 8, true), true);
    let rest = (seconds - days * DAY) | 0; // 0 .. 86399: int32 arithmetic from here
    const hour = (rest / 3600) | 0;
    rest -= hour * 3600;
    const minute = (rest / 60) | 0;
    const second = rest - minute * 60;
    const mh = (milli / 100) | 0,
      mr = milli - mh * 100;
    // "THH:MM:SS.mmmZ" in four little-endian stores (every byte is ASCII, so no word goes negative)
    const s2 = PAIR[second],
      m2 = PAIR[mr];
    dv.setUint32(p + 10, 84 | (PAIR[hour] << 8) | (58 << 24), true); // T h h :
    dv.setUint32(p + 14, PAIR[minute] | (58 << 16) | ((s2 & 0xff) << 24), true); // m m : s
    dv.setUint32(p + 18, (s2 >> 8) | (46 << 8) | ((ZERO + mh) << 16) | ((m2 & 0xff) << 24), true); // s . m m
    dv.setUint16(p + 22, (m2 >> 8) | (90 << 8), true); // m Z
    this.pos = p + 24;
  }

  /** The body written so far: a view of the shared buffer, valid until the next reset. */
  view(): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.pos);
  }
}

/** "00" .. "99" as byte pairs */
const DIGITS = new Uint8Array(200);
for (let v = 0; v < 100; v++) {
  DIGITS[2 * v] = ZERO + Math.floor(v / 10);
  DIGITS[2 * v + 1] = ZERO + (v % 10);
}
/** "00" .. "99" as little-endian 16-bit words: tens digit in the low byte */
const PAIR = new Uint16Array(100);
for (let v = 0; v < 100; v++) PAIR[v] = DIGITS[2 * v] | (DIGITS[2 * v + 1] << 8);

const DAY_CACHE = 1024;
const cachedDay = new Float64Array(DAY_CACHE).fill(NaN);
const dayBytes = new Uint8Array(DAY_CACHE * 10);
const dayView = bytesOf(dayBytes);

/** Writes "YYYY-MM-DD" of `days` since 1970-01-01 into cache slot `slot`. */
function fillDay(days: number, slot: number): void {
  const ymd = civilFromDays(days);
  const year = Math.floor(ymd / 10000);
  const month = Math.floor(ymd / 100) % 100;
  const day = ymd % 100;
  const yh = Math.floor(year / 100),
    yl = year - yh * 100;
  const b = dayBytes,
    p = slot * 10;
  b[p] = DIGITS[2 * yh];
  b[p + 1] = DIGITS[2 * yh + 1];
  b[p + 2] = DIGITS[2 * yl];
  b[p + 3] = DIGITS[2 * yl + 1];
  b[p + 4] = 45; // -
  b[p + 5] = DIGITS[2 * month];
  b[p + 6] = DIGITS[2 * month + 1];
  b[p + 7] = 45;
  b[p + 8] = DIGITS[2 * day];
  b[p + 9] = DIGITS[2 * day + 1];
  cachedDay[slot] = days;
}

/** This thread's writer (queries run synchronously, one at a time per thread). */
export const bodyWriter = new BodyWriter();
