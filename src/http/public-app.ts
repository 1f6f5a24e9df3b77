import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { KeyCache } from '../auth/key-cache.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { OrgIndex } from '../index/build.js';
import type { Metrics } from '../metrics/metrics.js';
import { searchBody } from '../query/execute.js';
import { parseSearchParams } from '../query/parse-params.js';
import { HttpError, unauthorized } from './errors.js';
import { commonHeaders, type Exchange, inFlight, requestIdFor, send, sendError } from './respond.js';
import type { HttpRequest, HttpResponse, TemplatedApp, UwsModule } from './uws.js';

export const SEARCH_PATH = '/contacts/message-search';
const ALLOW: Array<readonly [string, string]> = [['Allow', 'GET, HEAD']];

/**
 * Our own limits on what reaches the handler: the request target (path, `?`, query) and the
 * header block (names + values + 4 bytes a line), counted in characters. Over them: 414 / 431
 * with the contract body. A 1000-character `keywords` of 4-byte characters is 12,000 characters
 * percent-encoded, so 32 KiB leaves room for every parameter at its contract maximum.
 * uWS itself (this build) refuses earlier in some cases, without our body: see README/limits test.
 */
export const MAX_TARGET_CHARS = 32 * 1024;
export const MAX_HEADER_CHARS = 32 * 1024;

/** What the public endpoint needs from the catalog of loaded indexes. */
export interface IndexSource {
  /** true once the snapshots present at start are loaded */
  isReady(): boolean;
  get(organizationId: string): OrgIndex | null;
  /** Set when the organization's snapshot failed to load and no older version is in memory: 503. */
  unavailable?(organizationId: string): { retryAfterSeconds: number } | null;
  /** false when this replica's shard (ORGANIZATIONS) does not include the organization; absent: holds all */
  holds?(organizationId: string): boolean;
}

// Retry-After of the 503 answered while the service loads (CONTRACT 5).
const LOADING: Array<readonly [string, string]> = [['Retry-After', '1']];

/** Thrown by `handle` when the key's prefix is being looked up in the store: answer once it settles. */
class AwaitingKeyLookup {
  constructor(readonly lookup: Promise<void>) {}
}

export interface PublicAppDeps {
  uws: UwsModule;
  keys: KeyCache;
  indexes: IndexSource;
  metrics: Metrics;
  logger: Logger;
  sunsetAt: number | null;
  /** per-key token buckets, or null when rate limiting is off */
  rateLimiter?: RateLimiter | null;
}

const ANSWERED = Symbol('answered');

/** Per-request facts for the log line; never the key itself. */
interface Outcome {
  organizationId: string | null;
  keyPrefix: string | null;
}

/**
 * The public listener: GET/HEAD /contacts/message-search, 405 for other methods there, 404
 * elsewhere. Keys and indexes are in memory, so a request is answered before the handler returns;
 * the one exception is a key prefix not in memory yet (a key just created): the handler attaches
 * onAborted, returns, and answers (corked) once the one store lookup settles. `req` is never
 * used after the handler returns: everything is copied first.
 */
export function createPublicApp(deps: PublicAppDeps): TemplatedApp {
  const { uws, keys, indexes, metrics, logger } = deps;
  const rateLimiter = deps.rateLimiter ?? null;
  const common = commonHeaders(deps.sunsetAt);

  return uws.App().any('/*', (res: HttpResponse, req: HttpRequest) => {
    let ex: Exchange | null = null;
    try {
      ex = serve(res, req);
    } catch (thrown) {
      // Last line of defence: something outside the per-request error handling threw. uWS
      // terminates the process if the handler returns without answering, so answer (or close).
      logger.error({ request_id: ex?.requestId ?? null, err: thrown }, 'unexpected error in the request handler');
      try {
        if (!answered(res)) sendError(ex ?? { res, requestId: randomUUID(), head: false, aborted: false }, common, new HttpError(500));
      } catch {
        try {
          res.close();
        } catch {
          /* already closed */
        }
      }
    }
  });

  /** Whether a response was already ended or handed to backpressure on this res. */
  function answered(res: HttpResponse): boolean {
    return (res as HttpResponse & { [ANSWERED]?: boolean })[ANSWERED] === true;
  }

  function serve(res: HttpResponse, req: HttpRequest): Exchange {
    const startedAt = process.hrtime.bigint();
    // Copy everything needed from req now: it is invalid once this handler returns.
    const method = req.getCaseSensitiveMethod();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const authorization = req.getHeader('authorization');
    let headerChars = 0;
    req.forEach((k, v) => {
      headerChars += k.length + v.length + 4;
    });
    const ex: Exchange = { res, requestId: requestIdFor(req.getHeader('x-request-id')), head: method === 'HEAD', aborted: false };
    return respond(ex, startedAt, method, path, query, authorization, headerChars, true);
  }

  /** Answers from the copied request; `allowLookup` false once the key's store lookup has settled. */
  function respond(
    ex: Exchange, startedAt: bigint, method: string, path: string, query: string, authorization: string, headerChars: number, allowLookup: boolean,
  ): Exchange {
    const res = ex.res;
    const outcome: Outcome = { organizationId: null, keyPrefix: null };
    let status = 200;
    let body: Uint8Array | null = null;
    let error: HttpError | null = null;
    try {
      const targetChars = path.length + (query.length > 0 ? query.length + 1 : 0);
      body = handle(method, path, query, authorization, targetChars, headerChars, outcome, allowLookup);
    } catch (thrown) {
      if (thrown instanceof AwaitingKeyLookup) {
        // uWS terminates the process if the handler returns unanswered without onAborted.
        res.onAborted(() => {
          ex.aborted = true;
        });
        inFlight.add();
        const again = () => {
          try {
            respond(ex, startedAt, method, path, query, authorization, headerChars, false);
          } catch (late) {
            logger.error({ request_id: ex.requestId, err: late }, 'unexpected error after a key lookup');
            try {
              if (!ex.aborted) res.close();
            } catch {
              /* already closed */
            }
          } finally {
            inFlight.done();
          }
        };
        thrown.lookup.then(again, again);
        return ex;
      }
      error = toHttpError(thrown, logger, ex.requestId);
      status = error.status;
    }
    try {
      (res as HttpResponse & { [ANSWERED]?: boolean })[ANSWERED] = true;
      if (error) sendError(ex, common, error);
      else send(ex, common, 200, body!);
    } catch (thrown) {
      // Writing itself failed: nothing sensible can reach the client any more; never leave the
      // response unanswered (uWS would terminate the process).
      logger.error({ request_id: ex.requestId, err: thrown }, 'failed to write a response');
      status = 500;
      try {
        res.close();
      } catch {
        /* already closed */
      }
    }
    metrics.observe('public', status, startedAt);
    logger.info(
      {
        request_id: ex.requestId,
        method,
        path: path.length > 256 ? path.slice(0, 256) + '...' : path,
        status,
        duration_ms: Number(process.hrtime.bigint() - startedAt) / 1e6,
        organization_id: outcome.organizationId,
        key_prefix: outcome.keyPrefix,
      },
      'request',
    );
    return ex;
  }

  /** The CONTRACT 5 order: route, 401, 403 scope, 400, 403 organization, 421 other shard, then the search. */
  function handle(
    method: string, path: string, query: string, authorization: string, targetChars: number, headerChars: number, outcome: Outcome, allowLookup: boolean,
  ): Uint8Array {
    if (targetChars > MAX_TARGET_CHARS) throw new HttpError(414, `The request target is longer than ${MAX_TARGET_CHARS} characters.`);
    if (headerChars > MAX_HEADER_CHARS) throw new HttpError(431, `The request headers are larger than ${MAX_HEADER_CHARS} characters.`);
    if (path !== SEARCH_PATH) throw new HttpError(404);
    if (method !== 'GET' && method !== 'HEAD') {
      throw new HttpError(405, 'Only GET and HEAD are allowed on this path.', { headers: ALLOW });
    }
    if (!keys.ready) throw new HttpError(503, undefined, { headers: LOADING });
    const auth = keys.authenticate(authorization, Date.now(), allowLookup);
    if (!auth.ok) {
      if (auth.lookup) throw new AwaitingKeyLookup(auth.lookup);
      outcome.keyPrefix = auth.prefix;
      throw unauthorized();
    }
    outcome.keyPrefix = auth.principal.prefix;
    if (rateLimiter) {
      const decision = rateLimiter.take(auth.principal.prefix);
      if (!decision.ok) {
        throw new HttpError(429, 'Too many requests for this API key; retry after the time in Retry-After.', {
          headers: [['Retry-After', String(decision.retryAfterSeconds)]],
        });
      }
    }
    if (!auth.hasRequiredScopes) {
      throw new HttpError(403, 'The API key lacks a required scope: contacts:read and messages:read are both needed.');
    }
    const parsed = parseSearchParams(query);
    if (!parsed.ok) throw new HttpError(400, 'The request has invalid parameters; see details.', { details: parsed.details });
    const request = parsed.request;
    outcome.organizationId = request.organizationId;
    if (!auth.principal.organizationIds.has(request.organizationId)) {
      throw new HttpError(403, 'The API key is not authorized for this organization.');
    }
    // After every check that depends on the key alone, so a key that does not grant the
    // organization still gets 403 here; a granted one learns the request reached the wrong shard.
    if (indexes.holds && !indexes.holds(request.organizationId)) throw new HttpError(421);
    if (!indexes.isReady()) throw new HttpError(503, undefined, { headers: LOADING });
    const index = indexes.get(request.organizationId);
    const down = index === null ? indexes.unavailable?.(request.organizationId) : null;
    if (down) {
      throw new HttpError(503, 'The data of this organization failed to load; retry after the time in Retry-After.', {
        headers: [['Retry-After', String(down.retryAfterSeconds)]],
      });
    }
    // the body's bytes, in this thread's output buffer: sent (copied) before the next search
    return searchBody(index, request);
  }
}

/** Anything that is not an HttpError is a bug: log it with the request id, answer a bare 500. */
export function toHttpError(thrown: unknown, logger: Logger, requestId: string): HttpError {
  if (thrown instanceof HttpError) return thrown;
  logger.error({ request_id: requestId, err: thrown }, 'unhandled error while answering a request');
  return new HttpError(500);
}
