import type { HttpError } from './errors.js';
import { type CommonHeaders, JSON_TYPE, renderError } from './respond.js';

/** What a listener's pipeline reads of a request: copied from uWS before the handler returns. */
export interface RequestIn {
  /** as sent (case-sensitive) */
  readonly method: string;
  /** the path, without the query */
  readonly path: string;
  /** the raw query string, without `?` ('' when none) */
  readonly query: string;
  /**
   * lower-case header names; the first value of a repeated header (as uWS `getHeader`), but
   * every Authorization line, joined by '\n' (see singleAuthorization), and X-Request-Id lines
   * that differ and every Connection line, joined by ', ' (one list, RFC 9110 5.3)
   */
  readonly headers: Readonly<Record<string, string>>;
  /** size of the header block: names + values + 4 a line (the 431 limit counts it) */
  readonly headerChars: number;
}

/** A whole response: what the uWS adapter writes, and what the pipeline's unit tests read. */
export interface Answer {
  readonly status: number;
  /** in wire order: Content-Type, the listener's common headers, X-Request-Id, the rest */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** the body's bytes or text; empty for HEAD (its Content-Length is among the headers) */
  readonly body: string | Uint8Array;
  /** HEAD: send the headers only */
  readonly head: boolean;
  readonly requestId: string;
}

/**
 * Builds a response. HEAD gets the same headers plus the would-be body's Content-Length, and no
 * body. A Uint8Array body may be a view of the thread's reusable output buffer: write it (uWS
 * copies) before the next search runs.
 */
export function answerOf(
  requestId: string,
  head: boolean,
  common: CommonHeaders,
  status: number,
  body: string | Uint8Array,
  contentType = JSON_TYPE,
  extra: ReadonlyArray<readonly [string, string]> = [],
): Answer {
  const headers: Array<readonly [string, string]> = [['Content-Type', contentType]];
  for (const pair of common.pairs) headers.push(pair);
  headers.push(['X-Request-Id', requestId]);
  for (const pair of extra) headers.push(pair);
  if (head) {
    headers.push(['Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength)]);
    return { status, headers, body: '', head, requestId };
  }
  return { status, headers, body, head, requestId };
}

/** The one place an HttpError becomes a response: its status, its headers, the CONTRACT 5 body. */
export function errorAnswer(requestId: string, head: boolean, common: CommonHeaders, err: HttpError): Answer {
  return answerOf(requestId, head, common, err.status, renderError(err, requestId), JSON_TYPE, err.headers);
}
