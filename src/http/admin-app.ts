import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import { HttpError } from './errors.js';
import { type Answer, answerOf, errorAnswer, type RequestIn } from './answer.js';
import { commonHeaders, requestIdFor } from './respond.js';
import { decodeQuery } from '../request/decode-query.js';
import { serveWith } from './uws-adapter.js';
import type { TemplatedApp, UwsModule } from './uws.js';

import { API_VERSION as VERSION } from './api-version.js';
import { parseOrganizationId } from '../model/organization-id.js';

/** What the admin listener needs from the catalog. */
export interface AdminCatalog {
  isReady(): boolean;
  /** While not ready, why, as /readyz says it (default: the snapshots are loading). */
  notReadyReason?(): string;
  /** Loads the newest snapshots (of one organization when given); resolves to a JSON-able summary. */
  reload(organizationId?: string): Promise<unknown>;
  /** Organizations whose last load failed, listed by /readyz (CONTRACT 6). */
  failed?(): unknown[];
}

// Seconds a client waits before asking again while the service loads or the store is down.
const RETRY_AFTER: Array<readonly [string, string]> = [['Retry-After', '1']];

export interface AdminAppDeps {
  uws: UwsModule;
  catalog: AdminCatalog;
  metrics: Metrics;
  logger: Logger;
  /** run before /metrics renders: serving threads send their response counts first */
  beforeScrape?: () => Promise<void>;
}

type Route = { method: 'GET' | 'POST'; run: (ex: AdminExchange, query: string) => Answer | Promise<Answer> };

/** What a route needs to build its answer. */
interface AdminExchange {
  readonly requestId: string;
  readonly head: boolean;
}

/**
 * The admin pipeline as one function: request in, whole answer out, or a promise of it for the
 * async routes (/metrics, POST /admin/reload).
 */
export type AdminPipeline = (req: RequestIn) => Answer | Promise<Answer>;

/**
 * The operator listener (CONTRACT 6): /healthz, /readyz, /metrics, POST /admin/reload. Bound to
 * 127.0.0.1 by default.
 */
export function createAdminApp(deps: AdminAppDeps): TemplatedApp {
  const { uws, metrics, logger } = deps;
  return serveWith(uws.App(), {
    common: commonHeaders(null),
    logger,
    budgeted: false,
    answer: createAdminPipeline(deps),
    done(req, answer, status, startedAt, aborted) {
      metrics.observe('admin', status, startedAt);
      logger.debug(
        {
          request_id: answer.requestId,
          method: req.method,
          path: req.path,
          status,
          duration_ms: Number(process.hrtime.bigint() - startedAt) / 1e6,
          aborted,
        },
        'admin request',
      );
    },
  });
}

/** Builds `answerAdminRequest` (no uWS: tests call it directly). */
export function createAdminPipeline(deps: Omit<AdminAppDeps, 'uws'>): AdminPipeline {
  const { catalog, metrics, logger } = deps;
  const beforeScrape = deps.beforeScrape ?? (() => Promise.resolve());
  const common = commonHeaders(null);
  const healthBody = JSON.stringify({ status: 'ok', version: VERSION });
  const ok = (ex: AdminExchange, body: string, contentType?: string) =>
    answerOf(ex.requestId, ex.head, common, 200, body, contentType);

  const routes: Record<string, Route> = {
    '/healthz': { method: 'GET', run: (ex) => ok(ex, healthBody) },
    '/readyz': {
      method: 'GET',
      run: (ex) => {
        if (!catalog.isReady())
          throw new HttpError(503, catalog.notReadyReason?.() ?? 'The snapshots present at start are still loading.', {
            headers: RETRY_AFTER,
          });
        // Ready means every organization was tried; those that failed are named (and retried).
        return ok(ex, JSON.stringify({ status: 'ready', failed_organizations: catalog.failed?.() ?? [] }));
      },
    },
    '/metrics': {
      method: 'GET',
      run: (ex) =>
        beforeScrape()
          .then(() => metrics.render())
          .then((text) => ok(ex, text, metrics.registry.contentType)),
    },
    '/admin/reload': {
      method: 'POST',
      run: (ex, query) => {
        const org = reloadTarget(query);
        const started = process.hrtime.bigint();
        return catalog.reload(org).then(
          (summary) => {
            metrics.reloads.inc({ result: 'ok' });
            metrics.reloadSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
            logger.info({ request_id: ex.requestId, organization_id: org ?? null, summary }, 'admin: reload done');
            return ok(ex, JSON.stringify(summary ?? {}));
          },
          (err: unknown) => {
            metrics.reloads.inc({ result: 'error' });
            // timed too: the histogram's count is every call, as README says (failures were left out)
            metrics.reloadSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
            // The store could not be listed at all (down): the operator may retry, nothing broke here.
            const msg = (err as Error)?.message ?? '';
            if (msg.startsWith('store:')) {
              logger.warn(
                { request_id: ex.requestId, organization_id: org ?? null, err: msg },
                'admin: reload failed, store unavailable',
              );
              throw new HttpError(
                503,
                'The store cannot be read; nothing was reloaded. Retry after the time in Retry-After.',
                { headers: RETRY_AFTER },
              );
            }
            throw err;
          },
        );
      },
    },
  };

  function toError(thrown: unknown, requestId: string): HttpError {
    if (thrown instanceof HttpError) return thrown;
    logger.error({ request_id: requestId, err: thrown }, 'admin: unhandled error');
    return new HttpError(500);
  }

  return function answerAdminRequest(req: RequestIn): Answer | Promise<Answer> {
    const { method, path, query } = req;
    const ex: AdminExchange = { requestId: requestIdFor(req.headers['x-request-id'] ?? ''), head: method === 'HEAD' };
    const fail = (thrown: unknown) => errorAnswer(ex.requestId, ex.head, common, toError(thrown, ex.requestId));
    try {
      const route = routes[path];
      if (!route) throw new HttpError(404);
      const allowed = route.method === 'GET' ? method === 'GET' || method === 'HEAD' : method === route.method;
      if (!allowed) {
        throw new HttpError(
          405,
          `Only ${route.method === 'GET' ? 'GET and HEAD are' : 'POST is'} allowed on this path.`,
          {
            headers: [['Allow', route.method === 'GET' ? 'GET, HEAD' : 'POST']],
          },
        );
      }
      const answer = route.run(ex, query);
      return answer instanceof Promise ? answer.catch(fail) : answer;
    } catch (thrown) {
      return fail(thrown);
    }
  };
}

/** `organization_id` of a reload request, validated; undefined reloads every organization. */
function reloadTarget(query: string): string | undefined {
  // decoded as the public listener decodes (CONTRACT 4), so both word a bad encoding alike
  const { values: all, malformed } = decodeQuery(query);
  if (malformed.includes('organization_id')) {
    throw new HttpError(400, undefined, {
      details: [{ parameter: 'organization_id', message: 'has malformed percent-encoding' }],
    });
  }
  const values = all.get('organization_id') ?? [];
  if (values.length === 0) return undefined;
  if (values.length > 1) {
    throw new HttpError(400, undefined, {
      details: [{ parameter: 'organization_id', message: 'must be given at most once' }],
    });
  }
  const org = parseOrganizationId(values[0]);
  if (org === null) {
    throw new HttpError(400, undefined, { details: [{ parameter: 'organization_id', message: 'must be a UUID' }] });
  }
  return org;
}
