/** A parameter problem as reported in a 400's `details` (CONTRACT 5). */
export interface Detail {
  parameter: string;
  message: string;
}

/** CONTRACT 5 error codes by HTTP status. */
export const ERROR_CODES = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  414: 'uri_too_long',
  421: 'misdirected_request',
  429: 'too_many_requests',
  431: 'headers_too_large',
  500: 'internal_error',
  503: 'unavailable',
} as const;

export type ErrorStatus = keyof typeof ERROR_CODES;

const DEFAULT_MESSAGES: Record<ErrorStatus, string> = {
  400: 'The request has invalid parameters; see details.',
  401: 'A valid API key is required as a Bearer token.',
  403: 'The API key is not allowed to perform this request.',
  404: 'No endpoint exists at this path.',
  405: 'This method is not allowed on this path.',
  414: 'The request line is too long.',
  421: 'This server does not hold this organization; the request was routed to the wrong shard.',
  429: 'Too many requests; retry later.',
  431: 'The request headers are too large.',
  500: 'An internal error occurred; retry with backoff.',
  503: 'The service is not ready yet; retry shortly.',
};

/**
 * The one error type of the HTTP layer: it carries the status, the readable sentence, the
 * `details` of a 400 and any extra headers (Allow, WWW-Authenticate). Only `renderError` turns
 * it into bytes.
 */
export class HttpError extends Error {
  readonly status: ErrorStatus;
  readonly details: Detail[] | undefined;
  readonly headers: ReadonlyArray<readonly [string, string]>;

  constructor(
    status: ErrorStatus,
    message?: string,
    opts: { details?: Detail[]; headers?: Array<readonly [string, string]> } = {},
  ) {
    super(message ?? DEFAULT_MESSAGES[status]);
    this.status = status;
    this.details = opts.details;
    this.headers = opts.headers ?? [];
  }

  get code(): string {
    return ERROR_CODES[this.status];
  }
}

/** 401 with the same body for every kind of bad key, so callers learn nothing about which. */
export const unauthorized = () => new HttpError(401, undefined, { headers: [['WWW-Authenticate', 'Bearer']] });
