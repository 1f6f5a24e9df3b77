import type { Logger } from 'pino';
import { requestLogger } from '../log/logger.js';
import type { KeyCache } from '../auth/key-cache.js';
import { bearerToken, parseKey, singleAuthorization } from '../auth/api-key.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { OrgIndex } from '../index/build.js';
import type { Metrics } from '../metrics/metrics.js';
import { searchBody } from '../query/execute.js';
import { parseSearchParams } from '../request/parse-params.js';
import { HttpError, unauthorized } from './errors.js';
import { type Answer, answerOf, errorAnswer, type RequestIn } from './answer.js';
import { commonHeaders, inFlight, requestIdFor } from './respond.js';
import { serveWith } from './uws-adapter.js';
import type { TemplatedApp, UwsModule } from './uws.js';

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
  /** where each response is counted (a serving thread batches them to the main thread's registry) */
  metrics: Pick<Metrics, 'observe'>;
  logger: Logger;
  sunsetAt: number | null;
  /** per-key token buckets, or null when rate limiting is off */
  rateLimiter?: RateLimiter | null;
  /** SLOW_CLIENT_BUFFER_MB in bytes: what the process holds for slow readers (respond.ts writeBody) */
  slowClientBufferBytes?: number;
  /** the process's count of bytes held for slow readers, shared by its serving threads (InFlight.attachHeld) */
  slowClientHeld?: SharedArrayBuffer;
}

/** Per-request facts for the log line; never the key itself. */
interface Outcome {
  organizationId: string | null;
  keyPrefix: string | null;
}

/** A search answer, with what the log line says about it. */
export interface SearchAnswer extends Answer {
  readonly organizationId: string | null;
  readonly keyPrefix: string | null;
}

/**
 * The public pipeline as one function: request in, whole answer out (status, headers, body bytes).
 * Keys and indexes are in memory, so it answers at once; the one exception is a key prefix not in
 * memory yet (a key just created): it then returns a promise of the answer, computed once the one
 * store lookup settles (its body is copied: the thread's output buffer is reused by the next search).
 */
export type SearchPipeline = (req: RequestIn) => SearchAnswer | Promise<SearchAnswer>;

/** The public listener: GET/HEAD /contacts/message-search, 405 for other methods there, 404 elsewhere. */
export function createPublicApp(deps: PublicAppDeps): TemplatedApp {
  const { uws, metrics, logger } = deps;
  const answerSearchRequest = createSearchPipeline(deps);
  const requestLog = requestLogger(logger);
  inFlight.heldMax = deps.slowClientBufferBytes ?? Number.POSITIVE_INFINITY;
  if (deps.slowClientHeld !== undefined) inFlight.attachHeld(deps.slowClientHeld);
  inFlight.onCut = (what, bodyBytes, heldBytes) =>
    logger.warn(
      { body_bytes: bodyBytes, held_bytes: heldBytes, limit_bytes: inFlight.heldMax },
      `slow readers hold SLOW_CLIENT_BUFFER_MB: a large response was ${what}`,
    );
  return serveWith(uws.App(), {
    common: commonHeaders(deps.sunsetAt),
    logger,
    budgeted: true,
    answer: answerSearchRequest,
    done(req, answer, status, startedAt) {
      metrics.observe('public', status, startedAt);
      // the line's object is not built when it would be dropped (LOG_LEVEL above info)
      if (!requestLog.isLevelEnabled('info')) return;
      const facts = answer as SearchAnswer;
      requestLog.info(
        {
          request_id: answer.requestId,
          method: req.method,
          path: req.path.length > 256 ? req.path.slice(0, 256) + '...' : req.path,
          status,
          duration_ms: Number(process.hrtime.bigint() - startedAt) / 1e6,
          organization_id: facts.organizationId,
          key_prefix: facts.keyPrefix,
        },
        'request',
      );
    },
  });
}

/** Builds `answerSearchRequest` over the given keys, indexes and limits (no uWS: tests call it directly). */
export function createSearchPipeline(deps: Omit<PublicAppDeps, 'uws' | 'metrics'>): SearchPipeline {
  const { keys, indexes, logger } = deps;
  const rateLimiter = deps.rateLimiter ?? null;
  const common = commonHeaders(deps.sunsetAt);

  return function answerSearchRequest(req: RequestIn): SearchAnswer | Promise<SearchAnswer> {
    const requestId = requestIdFor(req.headers['x-request-id'] ?? '');
    return respond(req, requestId, true);
  };

  /** Answers the copied request; `allowLookup` false once the key's store lookup has settled. */
  function respond(req: RequestIn, requestId: string, allowLookup: boolean): SearchAnswer | Promise<SearchAnswer> {
    const { method, path, query } = req;
    const head = method === 'HEAD';
    const outcome: Outcome = { organizationId: null, keyPrefix: null };
    let answer: Answer;
    try {
      const targetChars = path.length + (query.length > 0 ? query.length + 1 : 0);
      const body = handle(
        method,
        path,
        query,
        singleAuthorization(req.headers.authorization ?? ''),
        targetChars,
        req.headerChars,
        outcome,
        allowLookup,
      );
      answer = answerOf(requestId, head, common, 200, body);
    } catch (thrown) {
      if (thrown instanceof AwaitingKeyLookup) {
        const again = () => {
          const later = respond(req, requestId, false) as SearchAnswer;
          // Another lookup settling in the same tick may search before this body is written.
          return typeof later.body === 'string' ? later : { ...later, body: Buffer.from(later.body) };
        };
        return thrown.lookup.then(again, again);
      }
      answer = errorAnswer(requestId, head, common, toHttpError(thrown, logger, requestId));
    }
    // fields named, not spread: a spread's generic copy measured ~3 µs a request under load
    return {
      status: answer.status,
      headers: answer.headers,
      body: answer.body,
      head: answer.head,
      requestId: answer.requestId,
      organizationId: outcome.organizationId,
      keyPrefix: outcome.keyPrefix,
    };
  }

  /** The CONTRACT 5 order: route, 401, 403 scope, 400, 403 organization, 421 other shard, then the search. */
  function handle(
    method: string,
    path: string,
    query: string,
    authorization: string,
    targetChars: number,
    headerChars: number,
    outcome: Outcome,
    allowLookup: boolean,
  ): Uint8Array {
    if (targetChars > MAX_TARGET_CHARS)
      throw new HttpError(414, `The request target is longer than ${MAX_TARGET_CHARS} characters.`);
    if (headerChars > MAX_HEADER_CHARS)
      throw new HttpError(431, `The request headers are larger than ${MAX_HEADER_CHARS} characters.`);
    if (path !== SEARCH_PATH) throw new HttpError(404);
    if (method !== 'GET' && method !== 'HEAD') {
      throw new HttpError(405, 'Only GET and HEAD are allowed on this path.', { headers: ALLOW });
    }
    if (!keys.ready) {
      // the keys are not listed yet (the store down at start): a missing or malformed key is
      // still refused first (CONTRACT 5), only a well-formed one has to wait
      const token = bearerToken(authorization);
      if (token === null || parseKey(token) === null) throw unauthorized();
      throw new HttpError(503, undefined, { headers: LOADING });
    }
    const auth = keys.authenticate(authorization, Date.now(), allowLookup);
    if (!auth.ok) {
      if (auth.lookup) throw new AwaitingKeyLookup(auth.lookup);
      outcome.keyPrefix = auth.prefix;
      if (auth.unavailable) {
        throw new HttpError(
          503,
          'The API key cannot be checked now: the key store is unavailable. Retry after the time in Retry-After.',
          { headers: LOADING },
        );
      }
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
    if (!parsed.ok)
      throw new HttpError(400, 'The request has invalid parameters; see details.', { details: parsed.details });
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
