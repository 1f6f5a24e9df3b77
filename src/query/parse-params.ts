import type { SearchRequest } from './search-request.js';

export interface ParamProblem { parameter: string; message: string }
export type ParseResult = { ok: true; request: SearchRequest } | { ok: false; details: ParamProblem[] };

/** Parses the raw query string (after `?`, undecoded) per CONTRACT 2 and 4; collects every problem. */
export function parseSearchParams(rawQuery: string): ParseResult {
  throw new Error('params: not implemented yet' + rawQuery);
}
