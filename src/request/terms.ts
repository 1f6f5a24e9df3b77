import { analyzeTerm } from '../text/analyze.js';

/** CONTRACT 2 and 8: limits of the request's terms, counted in code points. */
export const MAX_TERMS = 10;
export const MAX_TERM_CODE_POINTS = 200;
export const MAX_Q_CODE_POINTS = 200;
export const MAX_KEYWORDS_CODE_POINTS = 1000;

// Split on the raw text, before N(): a fullwidth comma does not split (CONTRACT 10).
const KEYWORD_SEPARATORS = /\r\n|[,;\n\r]/;

/**
 * The final terms of a request (CONTRACT 2 steps 1-6): q, then keywords split on , ; and line
 * breaks, then each keyword; each through the analyzer (normalized, cut, discarded), then
 * de-duplicated, first 10 kept.
 */
export function resolveTerms(q: string | null, keywords: string | null, keyword: string[]): string[] {
  const raw: string[] = [];
  if (q !== null) raw.push(q);
  if (keywords !== null) for (const k of keywords.split(KEYWORD_SEPARATORS)) raw.push(k);
  for (const k of keyword) raw.push(k);
  const out: string[] = [];
  for (const r of raw) {
    const t = analyzeTerm(r, MAX_TERM_CODE_POINTS);
    if (t !== null && !out.includes(t.text)) {
      out.push(t.text);
      if (out.length === MAX_TERMS) break;
    }
  }
  return out;
}
