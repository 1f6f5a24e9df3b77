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

/** An RFC 3339 date-time with offset (import files), as epoch ms, or null when invalid. */
export function parseRfc3339(value: string): number | null {
  const m = RFC3339_STRICT.exec(value);
  return m ? fromMatch(m) : null;
}
