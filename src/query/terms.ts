import { normalize, TOKEN } from '../text/normalize.js';

/** CONTRACT 2 and 8: limits of the request's terms, counted in code points. */
export const MAX_TERMS = 10;
export const MAX_TERM_CODE_POINTS = 200;
export const MAX_Q_CODE_POINTS = 200;
export const MAX_KEYWORDS_CODE_POINTS = 1000;

// Split on the raw text, before N(): a fullwidth comma does not split (CONTRACT 10).
const KEYWORD_SEPARATORS = /\r\n|[,;\n\r]/;
const WHITE_RUNS = /\s+/g;
const HAS_TOKEN = /[\p{L}\p{N}]/u;

/** Number of Unicode code points (not UTF-16 units) in s. */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // a high surrogate followed by a low one is one code point
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function cutToCodePoints(s: string, max: number): string {
  let n = 0;
  let i = 0;
  while (i < s.length && n < max) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      i += d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
    } else i++;
    n++;
  }
  return s.slice(0, i);
}

/** One raw term through CONTRACT 2 steps 2-4; null when discarded. */
function normalizeTerm(raw: string): string | null {
  let t = normalize(raw).trim().replace(WHITE_RUNS, ' ');
  if (codePointLength(t) > MAX_TERM_CODE_POINTS) t = cutToCodePoints(t, MAX_TERM_CODE_POINTS).trim();
  // Checked after the cut as well, so a cut never leaves a term without any token to search.
  if (codePointLength(t) < 2 || !HAS_TOKEN.test(t)) return null;
  return t;
}

/**
 * The final terms of a request (CONTRACT 2 steps 1-6): q, then keywords split on , ; and line
 * breaks, then each keyword; normalized, discarded, cut, de-duplicated, first 10 kept.
 */
export function resolveTerms(q: string | null, keywords: string | null, keyword: string[]): string[] {
  const raw: string[] = [];
  if (q !== null) raw.push(q);
  if (keywords !== null) for (const k of keywords.split(KEYWORD_SEPARATORS)) raw.push(k);
  for (const k of keyword) raw.push(k);
  const out: string[] = [];
  for (const r of raw) {
    const t = normalizeTerm(r);
    if (t !== null && !out.includes(t)) {
      out.push(t);
      if (out.length === MAX_TERMS) break;
    }
  }
  return out;
}

/** The token sequence a term must match contiguously (CONTRACT 1). */
export function termTokens(term: string): string[] {
  return normalize(term).match(TOKEN) ?? [];
}
