import type { Answer, RequestIn } from './answer.js';
import { HttpError } from './errors.js';
import { byteLength, closeOf, type CommonHeaders, type Exchange, inFlight, requestIdFor } from './respond.js';
import { errorAnswer } from './answer.js';
import { writeAnswer } from './respond.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';
import type { Logger } from 'pino';

/** A listener's pipeline, and what it does once a response went out (metrics, log line). */
export interface Listener {
  /** Answers now, or later (a store lookup, an admin reload); never rejects on purpose. */
  answer(req: RequestIn): Answer | Promise<Answer>;
  /** Called once per request: `status` is what was sent (500 when writing the answer failed). */
  done(req: RequestIn, answer: Answer, status: number, startedAt: bigint, aborted: boolean): void;
  /** headers of the last-resort 500 */
  common: CommonHeaders;
  logger: Logger;
  /**
   * Whether large answers are refused or cut while slow readers hold SLOW_CLIENT_BUFFER_MB (the
   * public listener). The operator listener is not: its /metrics of ~150 organizations or more is
   * over 64 KiB, and scrapes failed with 503 exactly when public clients read slowly (a review).
   */
  budgeted: boolean;
}

/**
 * The one bridge between uWS and a pipeline, used by both listeners: copies the request (it is
 * invalid once the handler returns), writes the answer, and keeps uWS's rules: a handler answers
 * before returning or attaches onAborted first; writes after an await are corked (writeAnswer).
 */
export function serveWith(app: TemplatedApp, listener: Listener): TemplatedApp {
  const { logger, common, budgeted } = listener;
  return app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const startedAt = process.hrtime.bigint();
    const request = copyRequest(req);
    const ex: Exchange = {
      res,
      aborted: false,
      close: closeOf(firstConnection, request.headers.connection),
      budgeted,
    };
    let result: Answer | Promise<Answer>;
    try {
      result = listener.answer(request);
    } catch (thrown) {
      // Last line of defence: the pipeline turns its own errors into answers; this is a bug.
      const requestId = requestIdFor(request.headers['x-request-id'] ?? '');
      logger.error({ request_id: requestId, err: thrown }, 'unexpected error in the request handler');
      result = errorAnswer(requestId, request.method === 'HEAD', common, new HttpError(500));
    }
    if (!(result instanceof Promise)) {
      finish(ex, request, result, startedAt);
      return;
    }
    // uWS terminates the process if the handler returns unanswered without onAborted.
    res.onAborted(() => {
      ex.aborted = true;
    });
    // Shutdown waits for it.
    inFlight.add();
    result
      .then(
        (answer) => finish(ex, request, answer, startedAt),
        (late: unknown) => {
          logger.error({ err: late }, 'unexpected error after an asynchronous step');
          closeQuietly(ex);
        },
      )
      .finally(() => inFlight.done());
  });

  function finish(ex: Exchange, request: RequestIn, answer: Answer, startedAt: bigint): void {
    const sent = budgeted ? busyAnswer(answer, common) : answer;
    let status = sent.status;
    try {
      writeAnswer(ex, sent);
    } catch (thrown) {
      // Writing itself failed: nothing sensible can reach the client any more; never leave the
      // response unanswered (uWS would terminate the process).
      logger.error({ request_id: answer.requestId, err: thrown }, 'failed to write a response');
      status = 500;
      closeQuietly(ex);
    }
    try {
      listener.done(request, answer, status, startedAt, ex.aborted);
    } catch (thrown) {
      // The answer is out; a failing log sink or metric must not escape into uWS.
      try {
        logger.error({ request_id: answer.requestId, err: thrown }, 'failed to record a response');
      } catch {
        /* the logger itself is broken */
      }
    }
  }
}

function closeQuietly(ex: Exchange): void {
  try {
    if (!ex.aborted) ex.res.close();
  } catch {
    /* already closed */
  }
}

/**
 * The first `Connection` line's value of the request copyRequest last copied ('' without one):
 * the one uWS tests (closeOf). Read right after the copy, in the same synchronous handler.
 */
let firstConnection = '';

/** Everything a pipeline may read, copied out of `req`. */
export function copyRequest(req: HttpRequest): RequestIn {
  // no prototype: a header named __proto__ is just a header
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  let headerChars = 0;
  firstConnection = '';
  req.forEach((k, v) => {
    headerChars += k.length + v.length + 4;
    // uWS getHeader returns the first of repeated headers: keep the first too.
    if (headers[k] === undefined) {
      headers[k] = v;
      if (k === 'connection') firstConnection = v;
    }
    // every Authorization line, for singleAuthorization (several keys are ambiguous: a 401)
    else if (k === 'authorization') headers[k] += `\n${v}`;
    // X-Request-Id lines that differ are one list (RFC 9110 5.3), never a well-formed id: a new
    // one (the first alone was echoed: an audit); lines that agree are that id (as Authorization)
    else if (k === 'x-request-id' && headers[k] !== v) headers[k] += `, ${v}`;
    // Connection lines are one list too: `keep-alive` then `close` asks for a close (an audit)
    else if (k === 'connection') headers[k] += `, ${v}`;
  });
  return {
    method: req.getCaseSensitiveMethod(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers,
    headerChars,
  };
}

/**
 * Bodies larger than this (64 KiB; the default limits' are 8-50 KB) may be more than a socket
 * takes at once: one asked while other slow readers' bodies fill the server's budget would be
 * held past it, or cut midway (respond.ts writeBody), so it is refused up front.
 */
const LARGE_BODY = 1 << 16;

const BUSY = new HttpError(
  503,
  'The server is writing other large responses to clients that read slowly; retry after the time in Retry-After.',
  { headers: [['Retry-After', '1']] },
);

/**
 * `answer`, or a 503 `unavailable` (Retry-After: 1) in its place when its body is large and the
 * bodies the server holds for slow readers are at SLOW_CLIENT_BUFFER_MB: refused before anything is
 * written, which a client can retry, rather than a 200 cut midway.
 */
export function busyAnswer(answer: Answer, common: CommonHeaders): Answer {
  if (answer.head || answer.status !== 200) return answer;
  const bytes = byteLength(answer.body);
  if (bytes <= LARGE_BODY || !inFlight.wouldOverflow(bytes)) return answer;
  inFlight.onCut?.('refused with 503', bytes, inFlight.heldBytes);
  return errorAnswer(answer.requestId, false, common, BUSY);
}
