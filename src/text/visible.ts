/**
 * `s` for a terminal or a log line: control and invisible format characters (C0, DEL, C1, soft
 * hyphen, zero-width and direction marks, line and paragraph separators, BOM) shown as \uXXXX.
 * Without it a key name could move the cursor or recolour the terminal, and a BOM in the middle
 * of an import file read as `Unexpected token '', ...` with nothing to see between the quotes.
 */
export function visibleText(s: string): string {
  return s.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;
