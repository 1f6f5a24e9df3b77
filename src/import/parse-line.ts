/** One NDJSON line to a validated record, or the ImportError naming its file, line and field. */
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { ImportError, show } from './import-error.js';
import { firstInvalidUtf8, type Line } from './line-reader.js';
import { visibleText } from '../text/visible.js';

/**
 * The error for a line that is not valid UTF-8, naming the field whose value holds the first bad
 * sequence when the line is otherwise a JSON object: the bad bytes are replaced by a random marker
 * that is valid inside a JSON string, and the field holding the marker is the culprit.
 */
function utf8Error(bytes: Buffer, file: string, line: number): ImportError {
  const bad = firstInvalidUtf8(bytes) ?? { at: 0, length: 0 };
  const hex = [...bytes.subarray(bad.at, bad.at + bad.length)]
    .map((b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`)
    .join(' ');
  const problem = `invalid UTF-8 (${hex} at byte ${bad.at + 1} of the line)`;
  // Plain ASCII: valid inside a JSON string, a syntax error anywhere else.
  const marker = `~${randomBytes(8).toString('hex')}~`;
  let field: string | null = null;
  try {
    const text = Buffer.concat([
      bytes.subarray(0, bad.at),
      Buffer.from(marker),
      bytes.subarray(bad.at + bad.length),
    ]).toString('utf8');
    const json = JSON.parse(text) as unknown;
    if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
      for (const [k, val] of Object.entries(json)) {
        if (JSON.stringify(val)?.includes(marker)) {
          field = k;
          break;
        }
      }
    }
  } catch {
    /* not JSON apart from the bad bytes: the line only */
  }
  return new ImportError(file, line, field, problem);
}

/** Parses one line; throws ImportError naming the first problem. */
export function parseLine<S extends v.GenericSchema>(
  schema: S,
  { text, invalidUtf8 }: Line,
  file: string,
  line: number,
): v.InferOutput<S> {
  if (invalidUtf8 !== undefined) throw utf8Error(invalidUtf8, file, line);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ImportError(file, line, null, `invalid JSON: ${visibleText((err as Error).message)}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ImportError(file, line, null, `expected a JSON object, got ${show(json)}`);
  }
  const r = v.safeParse(schema, json, { abortEarly: true });
  if (r.success) return r.output;
  const issue = r.issues[0];
  const field = issue.path?.map((p) => String(p.key)).join('.') ?? null;
  const missing = issue.kind === 'schema' && issue.type === 'object' && issue.input === undefined;
  throw new ImportError(file, line, field, missing ? 'missing' : `${issue.message}, got ${show(issue.input)}`);
}
