/**
 * Reference readings of instants (CONTRACT 4, 9, 10), written from the contract without the
 * product's parser (src/time): request `from` / `to`, and an import's `sent_at`.
 */

const isDigits = (s: string): boolean => s.length > 0 && [...s].every((c) => c >= '0' && c <= '9');

const daysIn = (y: number, m: number): number =>
  m === 2 ? ((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;

/** Two ASCII digits at s[i..i+2] as a number, or null. */
function two(s: string, i: number): number | null {
  const t = s.slice(i, i + 2);
  return t.length === 2 && isDigits(t) ? Number(t) : null;
}

/** Epoch ms of a proleptic-Gregorian UTC wall time (years 0-9999; no 1900 mapping of years < 100). */
function epoch(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, s, ms);
  return t.getTime();
}

/**
 * `from` / `to` (CONTRACT 4, 10): `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM[:SS[.fraction]]` with `Z`,
 * `±HH:MM` or nothing (UTC); `T` and `Z` upper case only; impossible dates and second 60 refused;
 * a fraction of any length cut to milliseconds; a date-only `to` is the day's last millisecond.
 */
export function referenceInstant(s: string, isTo: boolean): number | null {
  if (s.length < 10 || s[4] !== '-' || s[7] !== '-') return null;
  const yText = s.slice(0, 4);
  if (!isDigits(yText)) return null;
  const y = Number(yText),
    mo = two(s, 5),
    d = two(s, 8);
  if (mo === null || d === null || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo)) return null;
  if (s.length === 10) return isTo ? epoch(y, mo, d, 23, 59, 59, 999) : epoch(y, mo, d, 0, 0, 0, 0);
  if (s[10] !== 'T' || s[13] !== ':') return null;
  const h = two(s, 11),
    mi = two(s, 14);
  if (h === null || mi === null || h > 23 || mi > 59) return null;
  let i = 16,
    sec = 0,
    ms = 0;
  if (s[i] === ':') {
    const v = two(s, i + 1);
    if (v === null || v > 59) return null;
    sec = v;
    i += 3;
    if (s[i] === '.') {
      let j = i + 1;
      while (j < s.length && s[j] >= '0' && s[j] <= '9') j++;
      if (j === i + 1) return null;
      ms = Number((s.slice(i + 1, j) + '00').slice(0, 3));
      i = j;
    }
  }
  let offsetMin = 0;
  const rest = s.slice(i);
  if (rest === 'Z' || rest === '') offsetMin = 0;
  else if ((rest[0] === '+' || rest[0] === '-') && rest.length === 6 && rest[3] === ':') {
    const oh = two(rest, 1),
      om = two(rest, 4);
    if (oh === null || om === null || oh > 23 || om > 59) return null;
    offsetMin = (rest[0] === '-' ? -1 : 1) * (oh * 60 + om);
  } else return null;
  return epoch(y, mo, d, h, mi, sec, ms) - offsetMin * 60_000;
}

/**
 * An import's `sent_at` (CONTRACT 9: an RFC 3339 date-time with offset): seconds and an offset
 * required, `t` and `z` in either case (RFC 3339 5.6 allows lower case), otherwise as
 * referenceInstant. The brute-force reference reads message times with this, not the product's
 * parser, so a bug there shows as a difference (a review: both sides used src/time before).
 */
export function referenceSentAt(s: string): number | null {
  if (s.length < 20 || (s[10] !== 'T' && s[10] !== 't') || s[16] !== ':') return null;
  let upper = `${s.slice(0, 10)}T${s.slice(11)}`;
  if (upper.endsWith('z')) upper = `${upper.slice(0, -1)}Z`;
  // an offset is required: Z, or ±HH:MM
  const last = upper.slice(-6);
  if (!upper.endsWith('Z') && !((last[0] === '+' || last[0] === '-') && last[3] === ':')) return null;
  return referenceInstant(upper, false);
}
