import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import { HttpError } from './errors.js';
import { commonHeaders, type Exchange, inFlight, requestIdFor, send, sendError } from './respond.js';
import type { HttpRequest, HttpResponse, TemplatedApp, UwsModule } from './uws.js';

import { API_VERSION as VERSION } from './api-version.js';
import { parseOrganizationId } from '../model/organization-id.js';


/** What the admin listener needs from the catalog. */
export interface AdminCatalog {
  isReady(): boolean;
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
}

type Route = { method: 'GET' | 'POST'; run: (ex: Exchange, query: string) => void };

/**
 * The operator listener (CONTRACT 6): /healthz, /readyz, /metrics, POST /admin/reload. Bound to
 * 127.0.0.1 by default. The async routes attach onAborted before returning and cork their writes.
 */
export function createAdminApp(deps: AdminAppDeps): TemplatedApp {
  const { uws, catalog, metrics, logger } = deps;
  const common = commonHeaders(null);
  const healthBody = JSON.stringify({ status: 'ok', version: VERSION });

  const routes: Record<string, Route> = {
    '/healthz': { method: 'GET', run: (ex) => send(ex, common, 200, healthBody) },
    '/readyz': {
      method: 'GET',
      run: (ex) => {
        if (!catalog.isReady()) throw new HttpError(503, 'The snapshots present at start are still loading.', { headers: RETRY_AFTER });
        // Ready means every organization was tried; those that failed are named (and retried).
        send(ex, common, 200, JSON.stringify({ status: 'ready', failed_organizations: catalog.failed?.() ?? [] }));
      },
    },
    '/metrics': {
      method: 'GET',
      run: (ex) => {
        settle(ex, metrics.registry.metrics().then((text) => {
          send(ex, common, 200, text, metrics.registry.contentType);
          return 200;
        }));
      },
    },
    '/admin/reload': {
      method: 'POST',
      run: (ex, query) => {
        const org = reloadTarget(query);
        const started = process.hrtime.bigint();
        settle(ex, catalog.reload(org).then(
          (summary) => {
            metrics.reloads.inc({ result: 'ok' });
            metrics.reloadSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
            logger.info({ request_id: ex.requestId, organization_id: org ?? null, summary }, 'admin: reload done');
            send(ex, common, 200, JSON.stringify(summary ?? {}));
            return 200;
          },
          (err: unknown) => {
            metrics.reloads.inc({ result: 'error' });
            // The store could not be listed at all (down): the operator may retry, nothing broke here.
            const msg = (err as Error)?.message ?? '';
            if (msg.startsWith('store:')) {
              logger.warn({ request_id: ex.requestId, organization_id: org ?? null, err: msg }, 'admin: reload failed, store unavailable');
              throw new HttpError(503, 'The store cannot be read; nothing was reloaded. Retry after the time in Retry-After.', { headers: RETRY_AFTER });
            }
            throw err;
          },
        ));
      },
    },
  };

  /** Finishes an async route: errors become the contract body, the log line is written once. */
  function settle(ex: Exchange, done: Promise<number>): void {
    ex.res.onAborted(() => {
      ex.aborted = true;
    });
    // Shutdown waits for it (an admin reload may take a while).
    inFlight.add();
    (ex as Pending).pending = done
      .then(
        (status) => status,
        (thrown: unknown) => {
          const err = toError(thrown, ex.requestId);
          sendError(ex, common, err);
          return err.status;
        },
      )
      .finally(() => inFlight.done());
  }

  function toError(thrown: unknown, requestId: string): HttpError {
    if (thrown instanceof HttpError) return thrown;
    logger.error({ request_id: requestId, err: thrown }, 'admin: unhandled error');
    return new HttpError(500);
  }

  return uws.App().any('/*', (res: HttpResponse, req: HttpRequest) => {
    const startedAt = process.hrtime.bigint();
    const method = req.getCaseSensitiveMethod();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const ex: Pending = { res, requestId: requestIdFor(req.getHeader('x-request-id')), head: method === 'HEAD', aborted: false, pending: null };
    const done = (status: number) => {
      metrics.observe('admin', status, startedAt);
      logger.debug({ request_id: ex.requestId, method, path, status, duration_ms: Number(process.hrtime.bigint() - startedAt) / 1e6, aborted: ex.aborted }, 'admin request');
    };
    try {
      const route = routes[path];
      if (!route) throw new HttpError(404);
      const allowed = route.method === 'GET' ? method === 'GET' || method === 'HEAD' : method === route.method;
      if (!allowed) {
        throw new HttpError(405, `Only ${route.method === 'GET' ? 'GET and HEAD are' : 'POST is'} allowed on this path.`, {
          headers: [['Allow', route.method === 'GET' ? 'GET, HEAD' : 'POST']],
        });
      }
      route.run(ex, query);
      if (ex.pending) ex.pending.then(done, () => done(500));
      else done(200);
    } catch (thrown) {
      const err = toError(thrown, ex.requestId);
      try {
        sendError(ex, common, err);
      } catch (writeErr) {
        // Never return from a uWS handler without answering: that terminates the process.
        logger.error({ request_id: ex.requestId, err: writeErr }, 'admin: failed to write a response');
        try {
          res.close();
        } catch {
          /* already closed */
        }
      }
      done(err.status);
    }
  });
}

interface Pending extends Exchange {
  pending: Promise<number> | null;
}

/** `organization_id` of a reload request, validated; undefined reloads every organization. */
function reloadTarget(query: string): string | undefined {
  const values = new URLSearchParams(query).getAll('organization_id').filter((v) => v !== '');
  if (values.length === 0) return undefined;
  if (values.length > 1) {
    throw new HttpError(400, undefined, { details: [{ parameter: 'organization_id', message: 'must be given at most once' }] });
  }
  const org = parseOrganizationId(values[0]);
  if (org === null) {
    throw new HttpError(400, undefined, { details: [{ parameter: 'organization_id', message: 'must be a UUID' }] });
  }
  return org;
}
