/** The one expected failure of an import: a bad line, named by file base name, line and field. */
export class ImportError extends Error {
  /** `messages.ndjson line 37: field "sent_at": expected ..., got "2024-13-01"` */
  readonly detail: string;

  constructor(
    readonly file: string,
    readonly line: number,
    readonly field: string | null,
    readonly problem: string,
  ) {
    const detail = `${file} line ${line}: ${field === null ? '' : `field ${JSON.stringify(field)}: `}${problem}`;
    super(`import: ${detail}`);
    this.name = 'ImportError';
    this.detail = detail;
  }
}

/**
 * A value as shown in an error message: JSON, cut to 80 characters. A value nested too deep for
 * JSON.stringify (10,000 `[`: it threw RangeError, a stack trace and no line) is named by its kind.
 */
export function show(value: unknown): string {
  let s: string;
  try {
    s = value === undefined ? 'nothing' : (JSON.stringify(value) ?? String(value));
  } catch {
    s = Array.isArray(value) ? 'a nested array' : typeof value === 'object' ? 'a nested object' : typeof value;
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
