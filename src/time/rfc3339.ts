/** Strict date and date-time parsing shared by request parameters (CONTRACT 4, 10) and imports (CONTRACT 9). */

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// T and Z upper case only (CONTRACT 10); seconds optional for request parameters.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?$/;
// RFC 3339 proper, for imports: seconds and an offset required; t/z in either case as the RFC allows.
const RFC3339_STRICT = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const max = m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m - 1];
  return d <= max;
}

function utcMs(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  // Date.UTC maps years 0-99 to 1900-1999, so set the full year explicitly.
  const date = new Date(Date.UTC(2000, mo - 1, d, h, mi, s, ms));
  date.setUTCFullYear(y);
  return date.getTime();
}

function fromMatch(m: RegExpExecArray): number | null {
  const y = +m[1],
    mo = +m[2],
    d = +m[3],
    h = +m[4],
    mi = +m[5];
  const s = m[6] === undefined ? 0 : +m[6];
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return null;
  // A fraction of any length is cut (not rounded) to milliseconds.
  const ms = m[7] === undefined ? 0 : +(m[7] + '00').slice(0, 3);
  let t = utcMs(y, mo, d, h, mi, s, ms);
  const off = m[8];
  if (off !== undefined && off !== 'Z' && off !== 'z') {
    const oh = +off.slice(1, 3),
      om = +off.slice(4, 6);
    if (oh > 23 || om > 59) return null;
    const sign = off[0] === '-' ? -1 : 1;
    t -= sign * (oh * 60 + om) * 60000;
  }
  return Number.isFinite(t) ? t : null;
}

/**
 * A `from`/`to` request value as an instant (epoch ms), or null when malformed or impossible.
 * A date-only value is the start of its day, or its last millisecond when `endOfDay`.
 */
export function parseRequestInstant(value: string, endOfDay: boolean): number | null {
  const d = DATE_ONLY.exec(value);
  if (d) {
    const y = +d[1],
      mo = +d[2],
      day = +d[3];
    if (!validDate(y, mo, day)) return null;
    return endOfDay ? utcMs(y, mo, day, 23, 59, 59, 999) : utcMs(y, mo, day, 0, 0, 0, 0);
  }
  const m = DATE_TIME.exec(value);
  return m ? fromMatch(m) : null;
}

/**
 * The regex reading of parseRfc3339: kept as the definition the hand-written parser below is
 * property-tested against (test/unit/time/rfc3339.test.ts).
 */
export function parseRfc3339ByRegex(value: string): number | null {
  const m = RFC3339_STRICT.exec(value);
  return m ? fromMatch(m) : null;
}

/** The digit at s[i] as a number, or -1 (past the end: charCodeAt is NaN, which fails both tests). */
function digitAt(s: string, i: number): number {
  const d = s.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : -1;
}

/** The two-digit number at s[i], or -1. */
function twoAt(s: string, i: number): number {
  const a = digitAt(s, i),
    b = digitAt(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "days_from_civil"). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

const HOUR = 3600000;
const MINUTE = 60000;
const COLON = 58,
  DASH = 45,
  DOT = 46,
  PLUS = 43;

/**
 * An RFC 3339 date-time with offset (import files), as epoch ms, or null when invalid: the same
 * answer as parseRfc3339ByRegex, read char by char with integer arithmetic. The import runs it on
 * every message line; the regex, its match array, the `+m[i]` conversions and a Date object took
 * 1.1 s of a 1M-line import (bench/RESULTS.md, issue 10 session 8).
 */
export function parseRfc3339(value: string): number | null {
  // the import validates a line's sent_at (schemas.ts) and then reads its instant: one parse
  if (value === lastValue) return lastInstant;
  const t = parseUncached(value);
  lastValue = value;
  lastInstant = t;
  return t;
}

let lastValue: string | null = null;
let lastInstant: number | null = null;

function parseUncached(value: string): number | null {
  const n = value.length;
  if (n < 20) return null;
  const y0 = twoAt(value, 0),
    y1 = twoAt(value, 2);
  const mo = twoAt(value, 5),
    d = twoAt(value, 8),
    h = twoAt(value, 11),
    mi = twoAt(value, 14),
    s = twoAt(value, 17);
  const t = value.charCodeAt(10);
  if (
    y0 < 0 ||
    y1 < 0 ||
    mo < 0 ||
    d < 0 ||
    h < 0 ||
    mi < 0 ||
    s < 0 ||
    value.charCodeAt(4) !== DASH ||
    value.charCodeAt(7) !== DASH ||
    (t !== 84 && t !== 116) || // T t
    value.charCodeAt(13) !== COLON ||
    value.charCodeAt(16) !== COLON
  )
    return null;
  const y = y0 * 100 + y1;
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return null;
  let i = 19;
  // A fraction of any length is cut (not rounded) to milliseconds.
  let ms = 0;
  if (value.charCodeAt(i) === DOT) {
    i++;
    const from = i;
    for (; i < n; i++) {
      const dg = digitAt(value, i);
      if (dg < 0) break;
      if (i - from < 3) ms = ms * 10 + dg;
    }
    const digits = i - from;
    if (digits === 0) return null;
    if (digits === 1) ms *= 100;
    else if (digits === 2) ms *= 10;
  }
  let offset = 0;
  const z = value.charCodeAt(i);
  if (z === 90 || z === 122) {
    // Z z
    if (i + 1 !== n) return null;
  } else if (z === PLUS || z === DASH) {
    if (i + 6 !== n || value.charCodeAt(i + 3) !== COLON) return null;
    const oh = twoAt(value, i + 1),
      om = twoAt(value, i + 4);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return null;
    offset = (z === DASH ? -1 : 1) * (oh * HOUR + om * MINUTE);
  } else return null;
  return daysFromCivil(y, mo, d) * 86400000 + h * HOUR + mi * MINUTE + s * 1000 + ms - offset;
}
