/**
 * `npm run reload [-- [--organization-id UUID] [--timeout SECONDS] [--json]]`: makes every running
 * server load the newest snapshots; exits 0 only when every one of them did.
 *
 * Servers are found in the store's registry. Redis: a broadcast with a request id, re-sent every
 * 2 s until every live server acknowledged (a broadcast is lost while a server reconnects).
 * Embedded: `POST <adminUrl>/admin/reload` to each server. A server that stops meanwhile is
 * reported but not a failure: it is no longer running. Exit 0 done, 1 a server did not load,
 * 2 bad usage, 1 store unavailable.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { ConfigError, loadStoreConfig } from '../config/config.js';
import type { Fleet, ReloadAck, ServerEntry } from '../store/fleet.js';
import { onThisHost, pidAlive, processStopped } from '../store/file-utils.js';
import { openStores } from '../store/open-store.js';
import type { Stores } from '../store/stores.js';
import { parseOrganizationId } from '../model/organization-id.js';
import { visibleText } from '../text/visible.js';
import { newDataDirNote, repeatedOption } from './args.js';
import { reloadSummaryText, type ServerReloadSummary } from './reload-summary.js';
import { endQuietlyOnClosedOutput } from './closed-stdout.js';

const USAGE = `Usage: npm run reload [-- [--organization-id UUID] [--timeout SECONDS] [--json]]

Makes every running server (found in the store's registry) load the newest snapshots, of one
organization or of all, and waits until each has. Exit code 0 when every running server loaded
them (or none is running), 1 when one did not or the store is unavailable, 2 on bad usage.

Options:
  --organization-id UUID   reload this organization only
  --timeout SECONDS        how long to wait for the servers (default 30, at most 86400)
  --json                   print the per-server results as one JSON object
  -h, --help               show this text
`;

const RESEND_MS = 2_000;

class UsageError extends Error {}

interface Outcome {
  server: ServerEntry;
  /** 'ok', 'failed' or 'stopped' (left the registry before answering) */
  status: 'ok' | 'failed' | 'stopped';
  summary?: unknown;
  error?: string;
}

/**
 * A server on this host whose process is gone (killed, crashed, a zombie) is known to be stopped
 * at once; elsewhere only its registry entry expiring (5 heartbeats) tells.
 */
function goneFromThisHost(s: ServerEntry): boolean {
  return onThisHost(s) && !pidAlive(s.pid);
}

/**
 * A server that left the registry has stopped, unless it is on this host and its process is still
 * there: then it is hung or suspended (SIGSTOP), stopped heartbeating, and would answer from the
 * old snapshot once it runs again, so the reload has not reached it (CONTRACT 10).
 */
function leftAndStopped(s: ServerEntry, registered: ReadonlySet<string>): boolean {
  if (registered.has(s.id)) return false;
  return !onThisHost(s) || !pidAlive(s.pid);
}

function noAnswer(s: ServerEntry, timeoutMs: number, registered: ReadonlySet<string>): string {
  const hung = !registered.has(s.id) && onThisHost(s) && pidAlive(s.pid);
  return `no answer within ${timeoutMs / 1000} s${hung ? `; its process (pid ${s.pid}) is still there but stopped heartbeating: suspended or hung` : ''}`;
}

function describe(s: ServerEntry): string {
  return `server ${s.id} (pid ${s.pid} on ${s.hostname}${s.adminUrl ? `, ${s.adminUrl}` : ''})`;
}

/**
 * A server's reload summary (admin-app.ts: the catalog's ReloadSummary), as far as this tool reads
 * it; other fields pass through to --json. An answer of another shape (another service on the
 * admin port, a proxy's page) is that server's failure, not this tool's crash: `{}` printed
 * "Cannot read properties of undefined" and dropped every other server's line (a review).
 */
const Summary = v.looseObject({
  reloaded: v.array(v.looseObject({ organization_id: v.string(), version: v.number() })),
  unchanged: v.number(),
  failed: v.optional(
    v.array(v.looseObject({ organization_id: v.string(), version: v.nullable(v.number()), error: v.string() })),
  ),
});

function fromAck(server: ServerEntry, ack: ReloadAck): Outcome {
  if (!ack.ok) return { server, status: 'failed', error: ack.error };
  const parsed = v.safeParse(Summary, ack.summary);
  if (!parsed.success) {
    // (parsed JSON, from the admin answer or the ack hash: stringifying it again cannot throw)
    const shown = oneLine(JSON.stringify(ack.summary) ?? String(ack.summary));
    return { server, status: 'failed', error: `answered 200 with a body that is not a reload summary: ${shown}` };
  }
  const failed = parsed.output.failed ?? [];
  if (failed.length > 0) {
    // version null: the organization's pointer itself was unreadable.
    const error = failed
      .map((f) => `organization ${f.organization_id}${f.version === null ? '' : ` version ${f.version}`}: ${f.error}`)
      .join('; ');
    return { server, status: 'failed', summary: ack.summary, error };
  }
  return { server, status: 'ok', summary: ack.summary };
}

async function viaSignals(
  fleet: Fleet,
  servers: ServerEntry[],
  org: string | null,
  timeoutMs: number,
): Promise<Outcome[]> {
  const signals = fleet.signals!;
  const requestId = randomUUID();
  const deadline = Date.now() + timeoutMs;
  const pending = new Map(servers.map((s) => [s.id, s]));
  const out: Outcome[] = [];
  let lastSent = 0;
  let live: ReadonlySet<string> = new Set(servers.map((s) => s.id));
  while (pending.size > 0 && Date.now() < deadline) {
    if (Date.now() - lastSent >= RESEND_MS) {
      await signals.publish({ requestId, organizationId: org });
      lastSent = Date.now();
      // A server that left the registry will never answer (unless it is only suspended).
      live = new Set((await fleet.listServers()).map((s) => s.id));
      for (const [id, s] of pending)
        if (leftAndStopped(s, live)) {
          pending.delete(id);
          out.push({ server: s, status: 'stopped' });
        }
    }
    await new Promise((r) => setTimeout(r, 100));
    const acks = await signals.acks(requestId);
    for (const [id, ack] of acks) {
      const s = pending.get(id);
      if (s) {
        pending.delete(id);
        out.push(fromAck(s, ack));
      }
    }
    for (const [id, s] of pending)
      if (goneFromThisHost(s)) {
        pending.delete(id);
        out.push({ server: s, status: 'stopped' });
      }
  }
  for (const s of pending.values()) out.push({ server: s, status: 'failed', error: noAnswer(s, timeoutMs, live) });
  return out;
}

async function viaAdmin(
  fleet: Fleet,
  servers: ServerEntry[],
  org: string | null,
  timeoutMs: number,
): Promise<Outcome[]> {
  return Promise.all(
    servers.map(async (server): Promise<Outcome> => {
      if (!server.adminUrl) return { server, status: 'failed', error: 'registered without an admin URL' };
      const url = new URL('/admin/reload', server.adminUrl);
      if (org) url.searchParams.set('organization_id', org);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const outcome = await askAdmin(fleet, server, url, deadline, timeoutMs);
        if (outcome !== 'refused') return outcome;
        await new Promise((r) => setTimeout(r, REFUSED_RETRY_MS));
      }
    }),
  );
}

/**
 * How soon a server whose admin port refused the connection, still registered and running, is
 * asked again: it registers as it starts, before its admin listener opens (a start with 16
 * serving threads refused for ~1 s), and that listener closes first as it stops.
 */
const REFUSED_RETRY_MS = 100;

/** One POST /admin/reload to `server`; 'refused' when it should be asked again (REFUSED_RETRY_MS). */
async function askAdmin(
  fleet: Fleet,
  server: ServerEntry,
  url: URL,
  deadline: number,
  timeoutMs: number,
): Promise<Outcome | 'refused'> {
  try {
    const res = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
    const text = await res.text();
    // (one line: another service on that port may answer a page of HTML)
    if (res.status !== 200) return { server, status: 'failed', error: `HTTP ${res.status}: ${oneLine(text)}` };
    let summary: unknown;
    try {
      summary = JSON.parse(text);
    } catch {
      return { server, status: 'failed', error: `answered 200 with a body that is not JSON: ${oneLine(text)}` };
    }
    return fromAck(server, { ok: true, summary });
  } catch (err) {
    // killed on this host (connection refused on its admin port), or left the registry and
    // not merely suspended here
    const registered = new Set((await fleet.listServers()).map((s) => s.id));
    const gone = goneFromThisHost(server) || leftAndStopped(server, registered);
    if (gone) return { server, status: 'stopped' };
    if ((err as Error).name === 'TimeoutError')
      return { server, status: 'failed', error: noAnswer(server, timeoutMs, registered) };
    const cause = (err as { cause?: Error & { code?: string } }).cause;
    if (cause?.code === 'ECONNREFUSED') {
      // out of the registry and refusing: stopping (a suspended or hung server's port still accepts)
      if (!registered.has(server.id)) return { server, status: 'stopped' };
      if (Date.now() + REFUSED_RETRY_MS < deadline) return 'refused';
    }
    return { server, status: 'failed', error: `${url}: ${cause?.message ?? (err as Error).message}` };
  }
}

/** An answer's body for an error line: white space runs as one space, at most 200 characters, control characters escaped. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return visibleText(line.length > 200 ? `${line.slice(0, 200)}...` : line);
}

/** Nothing to reload: no server is registered (exit 0). */
function noServerRunning(json: boolean | undefined): number {
  if (json) process.stdout.write(JSON.stringify({ ok: true, servers: [] }) + '\n');
  else process.stdout.write('reload: no server is running; servers load the newest snapshots when they start\n');
  return 0;
}

/** What the whole command may take beyond --timeout: the store's connection and command limits, and a margin. */
const STORE_LIMITS_MS = 15_000;

/**
 * A failure before any server was asked (the store, the organization): on stderr, and with --json
 * also as the JSON object on stdout, so that a script parsing it does not read empty input.
 */
function failBeforeServers(json: boolean | undefined, message: string): number {
  process.stderr.write(`reload: ${message}\n`);
  if (json) process.stdout.write(JSON.stringify({ ok: false, error: message, servers: [] }) + '\n');
  return 1;
}

async function main(argv: string[]): Promise<number> {
  let values: { 'organization-id'?: string; timeout?: string; json?: boolean; help?: boolean };
  try {
    let tokens: Parameters<typeof repeatedOption>[0];
    ({ values, tokens } = parseArgs({
      args: argv,
      tokens: true,
      options: {
        'organization-id': { type: 'string' },
        timeout: { type: 'string', default: '30' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    const repeated = repeatedOption(tokens, ['organization-id', 'timeout']);
    if (repeated !== null) {
      throw new UsageError(
        repeated === 'organization-id'
          ? '--organization-id given more than once: reload one organization, or every one without it'
          : `--${repeated} given more than once`,
      );
    }
    const org = values['organization-id'];
    if (org !== undefined && parseOrganizationId(org) === null)
      throw new UsageError(`--organization-id must be a UUID, got ${JSON.stringify(org)}`);
    // at most a day: a timer takes up to 2^31 - 1 ms (24.8 days); past it Node fired at once
    if (!/^\d+(\.\d+)?$/.test(values.timeout!) || Number(values.timeout) <= 0 || Number(values.timeout) > 86_400)
      throw new UsageError(
        `--timeout must be a number of seconds above 0 and at most 86400 (a day), got ${JSON.stringify(values.timeout)}`,
      );
  } catch (err) {
    process.stderr.write(`reload: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const org = values['organization-id']?.toLowerCase() ?? null;
  const timeoutMs = Number(values.timeout) * 1000;
  // Whatever the store's client does, the command ends: once, after a cluster failover, a reload
  // waited 11 minutes with no socket open (the fleet audit). Past the servers' timeout and the
  // store's own limits (a connection 3 s, a command 10 s), it gives up, saying so.
  const limitMs = timeoutMs + STORE_LIMITS_MS;
  setTimeout(() => {
    failBeforeServers(
      values.json,
      `no outcome within ${limitMs / 1000} s (--timeout and the store's own limits): the store stopped answering; whether the servers reloaded is not known: run the reload again`,
    );
    process.exit(1);
  }, limitMs).unref();
  let stores: Stores | null = null;
  try {
    const config = loadStoreConfig();
    const note = await newDataDirNote('reload', config);
    if (note !== null) {
      // nothing was ever stored there, so no server uses it: said without creating the folder
      // (opening the store would, and the next run with the same typo would be silent)
      process.stderr.write(note);
      if (org !== null) {
        return failBeforeServers(values.json, `organization ${org} has no published snapshot: nothing to reload`);
      }
      return noServerRunning(values.json);
    }
    stores = await openStores(config, undefined, 'read');
    if (org !== null) {
      // a mistyped organization would otherwise read as a reload that found nothing new
      const { refs, unreadable } = await stores.snapshots.listLatest();
      if (!refs.some((r) => r.organizationId === org) && !unreadable.some((u) => u.organizationId === org)) {
        return failBeforeServers(values.json, `organization ${org} has no published snapshot: nothing to reload`);
      }
    }
    const fleet = stores.fleet;
    // with the suspended or hung ones of this host whose entries expired: they are running, and
    // would answer from the old snapshot once they resume (CONTRACT 10); they stay pending like a
    // registered server that does not answer, and fail the reload at the deadline
    const servers = [...(await fleet.listServers()), ...(await fleet.lapsedServers())];
    if (servers.length === 0) {
      return noServerRunning(values.json);
    }
    // a server of this host stopped by a signal cannot answer until it is resumed: named now,
    // rather than after the whole timeout
    const stopped = servers.filter((s) => onThisHost(s) && processStopped(s.pid));
    const asked = servers.filter((s) => !stopped.includes(s));
    const outcomes: Outcome[] = [
      ...(asked.length === 0
        ? []
        : fleet.signals
          ? await viaSignals(fleet, asked, org, timeoutMs)
          : await viaAdmin(fleet, asked, org, timeoutMs)),
      ...stopped.map(
        (server): Outcome => ({
          server,
          status: 'failed',
          error: `its process (pid ${server.pid}) is stopped by a signal (SIGSTOP or SIGTSTP): it would answer from the old snapshot once resumed; resume it (SIGCONT) and reload again`,
        }),
      ),
    ];
    const ok = outcomes.every((o) => o.status !== 'failed');
    if (values.json) {
      process.stdout.write(
        JSON.stringify({
          ok,
          servers: outcomes.map((o) => ({ ...o.server, status: o.status, summary: o.summary, error: o.error })),
        }) + '\n',
      );
    } else {
      for (const o of outcomes) {
        if (o.status === 'ok') {
          process.stdout.write(
            `reload: ${describe(o.server)}: ${reloadSummaryText(o.summary as ServerReloadSummary)}\n`,
          );
        } else if (o.status === 'stopped') {
          process.stdout.write(`reload: ${describe(o.server)} stopped before answering\n`);
        } else {
          process.stderr.write(`reload: ${describe(o.server)} did not reload: ${o.error}\n`);
        }
      }
    }
    return ok ? 0 : 1;
  } catch (err) {
    // Configuration problems as the server prints them: one line a problem, naming the variable.
    if (err instanceof ConfigError) {
      process.stderr.write(err.problems.join('\n') + '\n');
      if (values.json)
        process.stdout.write(JSON.stringify({ ok: false, error: err.problems.join('; '), servers: [] }) + '\n');
      return 1;
    }
    return failBeforeServers(values.json, (err as Error).message);
  } finally {
    await stores?.close();
  }
}

endQuietlyOnClosedOutput();
process.exitCode = await main(process.argv.slice(2));
