/**
 * The analyzer (CONTRACT 1-2): the one place a text becomes tokens and a raw term becomes a term.
 * The index build takes a message's tokens from `internTokens` (as ids) and the query takes a
 * term's tokens from `tokensOf`: one scan behind both, so the two sides cannot disagree.
 */
import { hasToken, internTokens, tokensOf, warmTokenizer } from './fast-tokens.js';
import { normalize } from './normalize.js';

/**
 * The tokens of a text (CONTRACT 1): `N(text).match(TOKEN)`, in one pass (see fast-tokens.ts).
 * A message's tokens in the index build; a term's tokens (`tokensOf(term.text)`, the sequence a
 * message must hold contiguously) when the query looks the term up, once a request.
 */
export { tokensOf };

/**
 * The same tokens as ids, for the index build: `internTokens(text, interner, sink)` pushes the id
 * of each token of `tokensOf(text)` in order, from the same pass, without a string per token.
 */
export { internTokens };

/** The tokenizer's tables built now, before a server listens (fast-tokens.ts). */
export { warmTokenizer };

/** A term after CONTRACT 2 steps 2-4; tokensOf(text) is never empty. */
export interface Term {
  /** N(), trimmed, each white space run one space, cut to the limit */
  text: string;
  /** its length in Unicode code points */
  codePoints: number;
}

/** CONTRACT 2 step 3: shorter terms are discarded. */
export const MIN_TERM_CODE_POINTS = 2;

const WHITE_RUNS = /\s+/g;

/**
 * One raw term through CONTRACT 2 steps 2-4: normalized, trimmed, white space collapsed, cut to
 * `maxCodePoints` (then trimmed again); null when it is then shorter than 2 code points or has no
 * token. Normalized once, and code points counted once, in the pass that finds the cut.
 */
export function analyzeTerm(raw: string, maxCodePoints: number): Term | null {
  let text = normalize(raw).trim().replace(WHITE_RUNS, ' ');
  let codePoints = 0;
  let cut = -1;
  for (let i = 0; i < text.length; i++) {
    if (codePoints === maxCodePoints) {
      cut = i;
      break;
    }
    if (isPairAt(text, i)) i++;
    codePoints++;
  }
  if (cut >= 0) {
    // The start is already trimmed; what trimEnd drops is white space, one code unit a code point.
    text = text.slice(0, cut).trimEnd();
    codePoints -= cut - text.length;
  }
  // Checked after the cut as well, so a cut never leaves a term without any token to search.
  // hasToken: the tokens themselves are built once, by the query that looks them up
  if (codePoints < MIN_TERM_CODE_POINTS || !hasToken(text)) return null;
  return { text, codePoints };
}

/** Number of Unicode code points (not UTF-16 units) in s (CONTRACT 10). */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    if (isPairAt(s, i)) i++;
    n++;
  }
  return n;
}

/** Is s[i] the high half of a surrogate pair (one code point in two code units)? */
function isPairAt(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff || i + 1 >= s.length) return false;
  const d = s.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff;
}
