import { LineTooLong } from './line-reader.js';

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
 * `err` as the ImportError of file `file` when it is a line the reader refused as too long (its
 * line number counted from the range's first line, `offset` lines into the file); else `err`.
 */
export function lineErrorOf(err: unknown, file: string, offset = 0): unknown {
  return err instanceof LineTooLong ? new ImportError(file, offset + err.line, null, err.message) : err;
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
