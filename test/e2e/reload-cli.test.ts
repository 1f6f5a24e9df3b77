/**
 * `npm run reload` from outside, on the embedded store, with a real server: many organizations
 * reloaded in one pass, and the organization flag's misuses (CONTRACT 8, 10).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EmbeddedFleet } from '../../src/store/embedded-fleet.js';
import { pidNamespace } from '../../src/store/file-utils.js';
import { importCli, reloadCli } from '../helpers/e2e.js';
import { baseEnv, freePort, runNode, startServer, tempDataDir, type RunningServer } from '../helpers/server.js';

const ORGS = 150;
const org = (i: number) => `${i.toString(16).padStart(8, '0')}-0000-4000-8000-00000000000f`;

const data = tempDataDir();
const env = baseEnv({ DATA_DIR: data.dir });
let server: RunningServer;

/** Writes an export of every organization (one contact, two messages each) stamped `mark`. */
function exportFiles(mark: string): { contactsFile: string; messagesFile: string } {
  const contacts: string[] = [];
  const messages: string[] = [];
  for (let i = 0; i < ORGS; i++) {
    const contact = `${i.toString(16).padStart(8, '0')}-1111-4111-8111-111111111111`;
    contacts.push(
      JSON.stringify({
        id: contact,
        organization_id: org(i),
        name: `c${i}`,
        phone: null,
        email: null,
        avatar_url: null,
        source: null,
      }),
    );
    for (let m = 0; m < 2; m++) {
      messages.push(
        JSON.stringify({
          id: `${mark}-${i}-${m}`,
          organization_id: org(i),
          contact_id: contact,
          conversation_id: `cv-${i}`,
          channel: 'email',
          direction: 'inbound',
          content: `pedido ${mark}`,
          sent_at: `2024-05-0${m + 1}T10:00:00Z`,
        }),
      );
    }
  }
  const contactsFile = path.join(data.dir, `contacts-${mark}.ndjson`);
  const messagesFile = path.join(data.dir, `messages-${mark}.ndjson`);
  writeFileSync(contactsFile, contacts.join('\n') + '\n');
  writeFileSync(messagesFile, messages.join('\n') + '\n');
  return { contactsFile, messagesFile };
}

before(async () => {
  const first = await importCli(env, exportFiles('one'));
  assert.equal(first.code, 0, first.stderr);
  server = await startServer({ DATA_DIR: data.dir });
});

after(async () => {
  await server?.stop();
  data.cleanup();
});

describe('reload CLI', () => {
  it(`${ORGS} organizations re-imported are reloaded well within 5 s (one build worker for the whole pass)`, async () => {
    // a worker started for each organization took ~70 ms each: 150 of them ran past 5 s
    const next = await importCli(env, exportFiles('two'));
    assert.equal(next.code, 0, next.stderr);
    const r = await runNode('src/cli/reload.ts', ['--timeout', '5', '--json'], env, 30_000);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { ok: boolean; servers: Array<{ status: string }> };
    assert.equal(out.ok, true);
    assert.deepEqual(
      out.servers.map((s) => s.status),
      ['ok'],
    );
    const reloadedNow = await reloadCli(env);
    assert.match(reloadedNow.stdout, /: 0 reloaded, 150 unchanged\n$/);
  });

  it('the human output: one line a server, its counts adding up to every organization', async () => {
    // how many the server had already picked up by itself (it polls the store every second)
    // varies; the list's cut at 10 is tested in test/unit/cli/reload-summary.test.ts
    const next = await importCli(env, exportFiles('three'));
    assert.equal(next.code, 0, next.stderr);
    const r = await reloadCli(env);
    assert.equal(r.code, 0, r.stderr);
    const m = /^reload: server .*: (\d+) reloaded(?: \((.*)\))?, (\d+) unchanged\n$/.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.equal(Number(m[1]) + Number(m[3]), ORGS);
    assert.equal((m[2]?.split(', ') ?? []).length, Math.min(Number(m[1]), 10) + (Number(m[1]) > 10 ? 1 : 0));
  });

  /**
   * Re-imports (stamped `mark`), suspends the server (SIGSTOP), waits `waitMs`, runs the reload
   * with `--timeout timeoutS`: it must fail naming the server as suspended or hung. Then SIGCONT,
   * and a reload succeeds.
   */
  async function reloadWhileSuspended(mark: string, waitMs: number, timeoutS: number): Promise<void> {
    const next = await importCli(env, exportFiles(mark));
    assert.equal(next.code, 0, next.stderr);
    server.child.kill('SIGSTOP');
    try {
      await new Promise((r) => setTimeout(r, waitMs));
      const t0 = Date.now();
      const r = await runNode('src/cli/reload.ts', ['--timeout', String(timeoutS)], env, 30_000);
      assert.equal(r.code, 1, r.stdout);
      assert.match(
        r.stderr,
        new RegExp(
          `did not reload: its process \\(pid ${server.child.pid}\\) is stopped by a signal \\(SIGSTOP or SIGTSTP\\): it would answer from the old snapshot once resumed; resume it \\(SIGCONT\\) and reload again\n`,
        ),
      );
      // named at once (the process state says it), not after the timeout
      assert.ok(Date.now() - t0 < timeoutS * 1000, `failed after ${Date.now() - t0} ms`);
    } finally {
      server.child.kill('SIGCONT');
    }
    const after = await reloadCli(env);
    assert.equal(after.code, 0, after.stderr);
  }

  it('an organization folder removed and made anew (versions from 1 again): the reload loads the new one', async () => {
    // the server compared versions only: holding version 1 of the old folder, it took the new
    // version 1 for the one it had, said "unchanged", and served the old data until a restart
    const one = org(ORGS - 1);
    const contact = `${(ORGS - 1).toString(16).padStart(8, '0')}-1111-4111-8111-111111111111`;
    const files = (mark: string, n: number) => {
      const contactsFile = path.join(data.dir, `anew-contacts-${mark}.ndjson`);
      const messagesFile = path.join(data.dir, `anew-messages-${mark}.ndjson`);
      writeFileSync(
        contactsFile,
        `${JSON.stringify({ id: contact, organization_id: one, name: 'c', phone: null, email: null, avatar_url: null, source: null })}\n`,
      );
      const lines = Array.from({ length: n }, (_, m) =>
        JSON.stringify({
          id: `${mark}-${m}`,
          organization_id: one,
          contact_id: contact,
          conversation_id: 'cv',
          channel: 'email',
          direction: 'inbound',
          content: `pedido ${mark}`,
          sent_at: `2024-05-0${m + 1}T10:00:00Z`,
        }),
      );
      writeFileSync(messagesFile, `${lines.join('\n')}\n`);
      return { contactsFile, messagesFile };
    };
    const served = async () => {
      const text = await (await fetch(`${server.adminUrl}/metrics`)).text();
      return Number(new RegExp(`^index_messages\\{organization_id="${one}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    const folder = path.join(data.dir, 'snapshots', one);
    for (const [mark, n] of [
      ['anew1', 3],
      ['anew2', 5],
    ] as const) {
      rmSync(folder, { recursive: true, force: true });
      const imp = await importCli(env, files(mark, n));
      assert.equal(imp.code, 0, imp.stderr);
      assert.match(imp.stderr + imp.stdout, new RegExp(`organization ${one} version 1:`));
      const r = await reloadCli(env);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await served(), n, `${mark}: the new folder's version 1 is served`);
    }
  });

  it('a suspended server (SIGSTOP) is not reached: exit 1 naming it, even after its registry entry expired', async () => {
    // its heartbeat entry expires after 5 s; the CLI took that for a stopped server and exited 0,
    // and on SIGCONT the server answered from the old snapshot (CONTRACT 10)
    await reloadWhileSuspended('four', 0, 8);
  });

  it('a server suspended before the reload, its registry entry already expired: exit 1 naming it', async () => {
    // the CLI listed live entries only, so it never knew of this server: exit 0, and on SIGCONT
    // the server answered from the old snapshot (CONTRACT 10); the entry's TTL is 5 heartbeats of 1 s
    await reloadWhileSuspended('five', 6500, 10);
  });

  it('--organization-id twice: exit 2 (the last one used to be reloaded alone, silently)', async () => {
    const r = await reloadCli(env, ['--organization-id', org(1), '--organization-id', org(2)]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^reload: --organization-id given more than once/);
  });

  it('--timeout past a day: exit 2 naming it (past 24.8 days a timer fired at once and blamed the server)', async () => {
    for (const t of ['2147484', '99999999999']) {
      const r = await runNode('src/cli/reload.ts', ['--timeout', t], env, 30_000);
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`^reload: --timeout must be a number of seconds above 0 and at most 86400 \\(a day\\), got "${t}"`),
      );
    }
  });

  it('an organization without any snapshot (a typo): exit 1, named', async () => {
    const missing = '12345678-1234-4234-8234-123456789012';
    const r = await reloadCli(env, ['--organization-id', missing]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `reload: organization ${missing} has no published snapshot: nothing to reload\n`);
    // with --json, the failure is also the JSON object on stdout (a script parsing it read nothing)
    const json = await reloadCli(env, ['--organization-id', missing, '--json']);
    assert.equal(json.code, 1);
    assert.deepEqual(JSON.parse(json.stdout), {
      ok: false,
      error: `organization ${missing} has no published snapshot: nothing to reload`,
      servers: [],
    });
    const ok = await reloadCli(env, ['--organization-id', org(3).toUpperCase()]);
    assert.equal(ok.code, 0, ok.stderr);
  });
});

describe('reload CLI: a registered admin URL answered by something else', () => {
  it('a registered server whose admin port refuses (starting, or stopping) is asked again, not failed at once', async () => {
    // a server registers as it starts, before its admin listener opens, and that listener closed
    // first as it stopped: the CLI exited 1 on "connect ECONNREFUSED" (a review)
    const other = tempDataDir();
    const port = await freePort();
    const summary = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"reloaded":[],"unchanged":3,"failed":[]}');
    });
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const fleet = new EmbeddedFleet(other.dir);
      mkdirSync(path.join(other.dir, 'servers'), { recursive: true });
      const entry = (id: string, pid: number) => ({
        id,
        pid,
        hostname: hostname(),
        pidNamespace: pidNamespace(),
        adminUrl: `http://127.0.0.1:${port}`,
        startedAt: new Date().toISOString(),
        heartbeatAt: Date.now(),
      });
      // starting: this test process stands for it; its admin port opens 1.5 s after the CLI began
      await fleet.registerServer(entry('starting', process.pid), 60_000);
      const opened = new Promise<void>((resolve) => setTimeout(() => summary.listen(port, '127.0.0.1', resolve), 1500));
      const r = await reloadCli(baseEnv({ DATA_DIR: other.dir }));
      await opened;
      assert.equal(r.code, 0, r.stderr);
      await new Promise<void>((resolve) => summary.close(() => resolve()));
      await fleet.unregisterServer('starting');
      // stopping: its port is closed, and its process ends 1.5 s later
      await fleet.registerServer(entry('stopping', sleeper.pid as number), 60_000);
      setTimeout(() => sleeper.kill('SIGKILL'), 1500);
      const s = await reloadCli(baseEnv({ DATA_DIR: other.dir }));
      assert.equal(s.code, 0, s.stderr);
      assert.match(s.stdout, /stopping/);
      // draining: its process lives on past --timeout, but it left the registry (1.5 s later) and
      // refuses: stopped, exit 0 (it failed at the timeout, "connect ECONNREFUSED")
      const drainer = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        await fleet.registerServer(entry('draining', drainer.pid as number), 60_000);
        setTimeout(() => void fleet.unregisterServer('draining'), 1500);
        const t0 = Date.now();
        const d = await runNode('src/cli/reload.ts', ['--timeout', '8'], baseEnv({ DATA_DIR: other.dir }), 30_000);
        assert.equal(d.code, 0, d.stderr);
        assert.ok(Date.now() - t0 < 8000, `${Date.now() - t0} ms`);
      } finally {
        drainer.kill('SIGKILL');
      }
    } finally {
      sleeper.kill('SIGKILL');
      summary.close();
      other.cleanup();
    }
  });

  it('a multi-line error page is shown on one line of stderr, exit 1', async () => {
    const other = tempDataDir();
    const page = http.createServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>\n  <body>\n\n    <h1>Bad Gateway</h1>\n  </body>\n</html>\n');
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = page.address() as AddressInfo;
      const fleet = new EmbeddedFleet(other.dir);
      mkdirSync(path.join(other.dir, 'servers'), { recursive: true });
      // this test process stands for the server: alive, on this host
      await fleet.registerServer(
        {
          id: 'not-a-search-server',
          pid: process.pid,
          hostname: hostname(),
          adminUrl: `http://127.0.0.1:${port}`,
          startedAt: new Date().toISOString(),
          heartbeatAt: Date.now(),
        },
        60_000,
      );
      const r = await reloadCli(baseEnv({ DATA_DIR: other.dir }));
      assert.equal(r.code, 1, r.stderr);
      const line = r.stderr.split('\n').find((l) => l.includes('HTTP 502'));
      assert.ok(line, r.stderr);
      assert.match(line, /HTTP 502: <html> <body> <h1>Bad Gateway<\/h1> <\/body> <\/html>$/);
    } finally {
      page.close();
      other.cleanup();
    }
  });

  it('a 200 that is not a reload summary fails that server alone: exit 1, the other server reported', async () => {
    // `{}` crashed the tool ("Cannot read properties of undefined") and dropped every other
    // server's line (a review)
    for (const [body, said] of [
      ['{}', 'answered 200 with a body that is not a reload summary: {}'],
      ['null', 'answered 200 with a body that is not a reload summary: null'],
      [
        '{"reloaded":[{"organization_id":1}],"unchanged":0}',
        'not a reload summary: {"reloaded":[{"organization_id":1}],',
      ],
      ['<html>fine</html>', 'answered 200 with a body that is not JSON: <html>fine</html>'],
    ]) {
      const other = tempDataDir();
      const answer = (text: string) =>
        http.createServer((_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(text);
        });
      const bad = answer(body);
      const good = answer('{"reloaded":[],"unchanged":3,"failed":[]}');
      await Promise.all([bad, good].map((x) => new Promise<void>((resolve) => x.listen(0, '127.0.0.1', resolve))));
      try {
        const fleet = new EmbeddedFleet(other.dir);
        mkdirSync(path.join(other.dir, 'servers'), { recursive: true });
        for (const [id, x] of [
          ['odd-answer', bad],
          ['good-answer', good],
        ] as const)
          await fleet.registerServer(
            {
              id,
              pid: process.pid,
              hostname: hostname(),
              adminUrl: `http://127.0.0.1:${(x.address() as AddressInfo).port}`,
              startedAt: new Date().toISOString(),
              heartbeatAt: Date.now(),
            },
            60_000,
          );
        const r = await reloadCli(baseEnv({ DATA_DIR: other.dir }));
        assert.equal(r.code, 1, `${body}: ${r.stderr}`);
        assert.ok(r.stderr.includes(said), `${body}: ${r.stderr}`);
        assert.match(r.stderr, /server odd-answer /);
        assert.doesNotMatch(r.stderr, /Cannot read|TypeError|SyntaxError/);
        assert.match(r.stdout + r.stderr, /server good-answer .*0 reloaded, 3 unchanged/);
      } finally {
        bad.close();
        good.close();
        other.cleanup();
      }
    }
  });
});
