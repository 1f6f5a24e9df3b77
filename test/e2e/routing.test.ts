/**
 * Routing through a real nginx: `npm run routing` turns a shards file into nginx.conf and into the
 * replicas' ORGANIZATIONS; nginx in front of two shard groups (one replica each) answers every
 * organization with the body its own replica gives directly; the wrong shard's replica says 421.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  gen,
  importCli,
  loadDataset,
  openHarness,
  organizationsOf,
  wordsOf,
  search,
  tempDir,
  waitFor,
  type StoreHarness,
} from '../helpers/e2e.js';
import {
  baseEnv,
  createKey,
  freePort,
  runNode,
  startServer,
  type CreatedKey,
  type RunningServer,
} from '../helpers/server.js';

const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

const routing = (args: string[], env: Record<string, string> = {}) => runNode('src/cli/routing.ts', args, baseEnv(env));

describe('routing CLI: usage and shards file errors', () => {
  const t = tempDir('routing-cli-');
  after(() => t.cleanup());
  test('a bad shards file: exit 2, every problem with its JSON path', async () => {
    const file = path.join(t.dir, 'shards.json');
    writeFileSync(
      file,
      JSON.stringify({
        shards: [
          { name: 'a', upstreams: ['127.0.0.1:3001'], organizations: ['00000000-0000-4000-8000-000000000001'] },
          {
            name: 'B!',
            upstreams: ['127.0.0.1:99999'],
            organizations: ['nope', '00000000-0000-4000-8000-000000000001'],
          },
        ],
      }),
    );
    const r = await routing(['nginx', '--shards', file]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /routing: shards\.json: \.shards\[1\]\.name must be 1-32 characters of \[a-z0-9_\], got "B!"/,
    );
    assert.match(r.stderr, /\.shards\[1\]\.upstreams\[0\] must be host:port, got "127\.0\.0\.1:99999"/);
    assert.match(r.stderr, /\.shards\[1\]\.organizations\[0\] must be a UUID, got "nope"/);
  });
  // The fleet audit: these passed (exit 0) and failed only later, in nginx -t or at a replica's start.
  test('a shard without organizations, a JSON mistake (line and column), --listen past 65535: exit 2; a BOM is read', async () => {
    const empty = path.join(t.dir, 'empty.json');
    writeFileSync(
      empty,
      JSON.stringify({
        shards: [
          { name: 'a', upstreams: ['h:1'], organizations: ['00000000-0000-4000-8000-000000000001'] },
          { name: 'b', upstreams: ['h:2'], organizations: [] },
        ],
      }),
    );
    const e = await routing(['organizations', '--shards', empty, '--shard', 'b']);
    assert.equal(e.code, 2);
    assert.match(
      e.stderr,
      /routing: empty\.json: \.shards\[1\]\.organizations must list at least one organization \(its replicas could not start with an empty ORGANIZATIONS\)/,
    );
    const broken = path.join(t.dir, 'broken.json');
    writeFileSync(broken, '{"shards": [\n  {"name": "a", "upstreams": ["h:1"]\n   "organizations": []}\n]}\n');
    const b = await routing(['nginx', '--shards', broken]);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /^routing: broken\.json: not valid JSON at line 3, column 4: /m);
    // V8 names no position for an unexpected token; the line and column are found all the same
    const token = path.join(t.dir, 'token.json');
    // (the column in characters: the emoji is one, not two UTF-16 units)
    writeFileSync(token, '{"shards": [\n  {"name": "a😀", "upstreams": [h:1]}\n]}\n');
    const tk = await routing(['nginx', '--shards', token]);
    assert.equal(tk.code, 2);
    assert.match(tk.stderr, /^routing: token\.json: not valid JSON at line 2, column 32: Unexpected token 'h'/m);
    const truncated = path.join(t.dir, 'truncated.json');
    writeFileSync(truncated, '{"shards": [\n');
    const tr = await routing(['nginx', '--shards', truncated]);
    assert.equal(tr.code, 2);
    assert.match(
      tr.stderr,
      /^routing: truncated\.json: not valid JSON at line 2, column 1: Unexpected end of JSON input/m,
    );
    const bom = path.join(t.dir, 'bom.json');
    writeFileSync(
      bom,
      `\ufeff${JSON.stringify({ shards: [{ name: 'a', upstreams: ['h:1'], organizations: ['00000000-0000-4000-8000-000000000001'] }] })}`,
    );
    const withBom = await routing(['organizations', '--shards', bom, '--shard', 'a']);
    assert.equal(withBom.code, 0, withBom.stderr);
    assert.equal(withBom.stdout, '00000000-0000-4000-8000-000000000001\n');
    for (const listen of ['0', '70000', '127.0.0.1:65536']) {
      const l = await routing(['nginx', '--shards', empty, '--listen', listen]);
      assert.equal(l.code, 2, listen);
      assert.match(l.stderr, new RegExp(`--listen must be PORT or HOST:PORT, a port 1-65535, got "${listen}"`));
    }
  });
  test('an organization in two shards, a missing file, bad usage: exit 2', async () => {
    const file = path.join(t.dir, 'twice.json');
    const org = '00000000-0000-4000-8000-000000000001';
    writeFileSync(
      file,
      JSON.stringify({
        shards: [
          { name: 'a', upstreams: ['h:1'], organizations: [org] },
          { name: 'b', upstreams: ['h:2', 'H:1'], organizations: [org.toUpperCase()] },
        ],
      }),
    );
    const twice = await routing(['nginx', '--shards', file]);
    assert.equal(twice.code, 2);
    // one replica in two shards would serve one of them with the other's ORGANIZATIONS
    assert.match(
      twice.stderr,
      /: \.shards\[1\]\.upstreams\[1\]: upstream "H:1" is also \.shards\[0\]\.upstreams\[0\]: a replica serves one shard/,
    );
    // named by its JSON path, and where it first was
    assert.match(
      twice.stderr,
      new RegExp(
        `: \\.shards\\[1\\]\\.organizations\\[0\\]: organization ${org} is in shards "a" \\(\\.shards\\[0\\]\\.organizations\\[0\\]\\) and "b"`,
      ),
    );
    const missing = await routing(['nginx', '--shards', path.join(t.dir, 'none.json')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /routing: none\.json: cannot read: ENOENT/);
    const usage = await routing(['proxy', '--shards', file]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /expected the command nginx or organizations, got "proxy"/);
    const good = path.join(t.dir, 'good.json');
    writeFileSync(
      good,
      JSON.stringify({ shards: [{ name: 'a', upstreams: ['h:1'], organizations: [org.toUpperCase()] }] }),
    );
    const ok = await routing(['organizations', '--shards', good, '--shard', 'a']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, `${org}\n`);
    const noShard = await routing(['organizations', '--shards', good, '--shard', 'zz']);
    assert.equal(noShard.code, 2);
    assert.match(noShard.stderr, /no shard named "zz"/);
    // a value option given twice is refused (parseArgs alone kept the last, silently)
    const repeated = await routing(['nginx', '--shards', file, '--shards', good]);
    assert.equal(repeated.code, 2);
    assert.equal(repeated.stdout, '');
    assert.match(repeated.stderr, /^routing: --shards given more than once\n/);
  });
});

describe('routing through a real nginx', {
  skip: NGINX ? false : 'nginx is not installed (apt-get install -y nginx); skipping the proxy test',
}, () => {
  const work = tempDir('routing-gen-');
  const prefix = tempDir('routing-nginx-');
  let h: StoreHarness;
  let orgs: string[];
  let words: Map<string, string[]>;
  let key: CreatedKey;
  let a: RunningServer, b: RunningServer;
  let nginx: ChildProcess | null = null;
  let proxy: string;
  let shardOf: Map<string, RunningServer>;

  before(async () => {
    await gen(work.dir, { messages: 900, contacts: 60, organizations: 4, seed: 1415 });
    const d = loadDataset(work.dir);
    orgs = organizationsOf(d);
    words = wordsOf(d, orgs, 4);
    h = await openHarness('embedded');
    assert.equal((await importCli(h.env, d)).code, 0);
    key = await createKey(h.env, orgs, 'contacts:read,messages:read');

    // One assignment: the replicas' ORGANIZATIONS come from it, then nginx.conf with their ports.
    const shardsFile = path.join(prefix.dir, 'shards.json');
    const assignment = (ua: string, ub: string) => ({
      shards: [
        { name: 'a', upstreams: [ua], organizations: [orgs[0], orgs[1]] },
        { name: 'b', upstreams: [ub], organizations: [orgs[2], orgs[3]] },
      ],
    });
    writeFileSync(shardsFile, JSON.stringify(assignment('127.0.0.1:1', '127.0.0.1:2')));
    const orgsOf = async (shard: string) => {
      const r = await routing(['organizations', '--shards', shardsFile, '--shard', shard]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim();
    };
    [a, b] = await Promise.all([
      startServer({ ...h.serverEnv, ORGANIZATIONS: await orgsOf('a') }),
      startServer({ ...h.serverEnv, ORGANIZATIONS: await orgsOf('b') }),
    ]);
    shardOf = new Map([
      [orgs[0], a],
      [orgs[1], a],
      [orgs[2], b],
      [orgs[3], b],
    ]);
    writeFileSync(shardsFile, JSON.stringify(assignment(new URL(a.url).host, new URL(b.url).host)));
    const port = await freePort();
    const conf = await routing(['nginx', '--shards', shardsFile, '--listen', `127.0.0.1:${port}`]);
    assert.equal(conf.code, 0, conf.stderr);
    const confFile = path.join(prefix.dir, 'nginx.conf');
    writeFileSync(confFile, conf.stdout);
    let out = '';
    nginx = spawn(NGINX!, ['-c', confFile, '-p', prefix.dir, '-g', 'daemon off;'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    nginx.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
    proxy = `http://127.0.0.1:${port}`;
    await waitFor(`nginx on port ${port} (${out})`, 10_000, async () => {
      if (nginx!.exitCode !== null) throw new Error(`nginx exited ${nginx!.exitCode}: ${out}`);
      try {
        await fetch(`${proxy}/`);
        return true;
      } catch {
        return false;
      }
    });
  });
  after(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((r) => nginx!.once('exit', r));
      nginx.kill('SIGQUIT');
      await exited;
    }
    await Promise.all([a?.stop(), b?.stop()]);
    await h?.cleanup();
    work.cleanup();
    prefix.cleanup();
  });

  test("every organization is answered through the proxy, equal to its replica's direct answer", async () => {
    let found = 0;
    for (const org of orgs) {
      for (const [i, q] of words.get(org)!.entries()) {
        // Upper-case ids route too (nginx lower-cases map keys; the replica echoes lower case).
        const id = i % 2 === 0 ? org : org.toUpperCase();
        const query = `organization_id=${id}&q=${encodeURIComponent(q)}&direction=all&limit=100`;
        const [viaProxy, direct] = await Promise.all([
          search(proxy, key.key, query),
          search(shardOf.get(org)!.url, key.key, query),
        ]);
        assert.equal(viaProxy.status, 200, `${query}: ${viaProxy.text}`);
        assert.equal(viaProxy.text, direct.text, query);
        found += JSON.parse(viaProxy.text).pagination.count > 0 ? 1 : 0;
      }
    }
    assert.ok(found >= orgs.length, `answers are not empty (${found})`);
  });

  test('10,000 organizations over 4 shards: nginx -t accepts the configuration without a warning', async () => {
    const hex = (i: number) => i.toString(16).padStart(12, '0');
    const shards = Array.from({ length: 4 }, (_, s) => ({
      name: `s${s}`,
      upstreams: [`127.0.0.1:${3000 + s}`],
      organizations: Array.from({ length: 2500 }, (_, i) => `00000000-0000-4000-8000-${hex(s * 2500 + i)}`),
    }));
    const file = path.join(prefix.dir, 'big.json');
    writeFileSync(file, JSON.stringify({ shards }));
    const conf = await routing(['nginx', '--shards', file, '--listen', '127.0.0.1:1']);
    assert.equal(conf.code, 0, conf.stderr);
    const confFile = path.join(prefix.dir, 'big.conf');
    writeFileSync(confFile, conf.stdout);
    const out = await new Promise<string>((resolve) => {
      const c = spawn(NGINX!, ['-t', '-q', '-c', confFile, '-p', prefix.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      c.stderr!.setEncoding('utf8').on('data', (d: string) => (text += d));
      c.on('close', (code) => resolve(`${code}:${text}`));
    });
    assert.equal(out, '0:', out);
  });

  test('a replica of the wrong shard answers 421; errors pass through the proxy unchanged', async () => {
    for (const [org, right] of shardOf) {
      const wrong = right === a ? b : a;
      const r = await search(wrong.url, key.key, `organization_id=${org}&q=pedido`);
      assert.equal(r.status, 421, r.text);
      assert.equal(JSON.parse(r.text).error, 'misdirected_request');
    }
    const res = await fetch(`${proxy}/contacts/message-search?organization_id=${orgs[3]}&q=x`, {
      headers: { authorization: `Bearer ${key.key}`, 'x-request-id': 'via-nginx-1' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-request-id'), 'via-nginx-1');
    assert.equal(((await res.json()) as { request_id: string }).request_id, 'via-nginx-1');
    const nf = await fetch(`${proxy}/nowhere`);
    assert.equal(nf.status, 404);
  });

  test('an empty organization_id before the real one, a percent-encoded name or hyphen, route to the right shard', async () => {
    // nginx's $arg_organization_id took the first value, even an empty one (absent, CONTRACT 4),
    // and never a name sent encoded (CONTRACT 10): the first shard answered 421
    for (const [org, right] of shardOf) {
      const q = encodeURIComponent(words.get(org)![0]);
      for (const query of [
        `organization_id=&organization_id=${org}&q=${q}`,
        `organization%5Fid=${org}&q=${q}`,
        `q=${q}&organization%5fid=${org.toUpperCase()}`,
        // a client that percent-encodes every non-alphanumeric (the first shard answered 421)
        `organization_id=${org.replace(/-/g, '%2D')}&q=${q}`,
        `organization_id=&organization%5Fid=${org.replace(/-/g, '%2d').toUpperCase()}&q=${q}`,
      ]) {
        const [viaProxy, direct] = await Promise.all([
          search(proxy, key.key, query),
          search(right.url, key.key, query),
        ]);
        assert.equal(viaProxy.status, 200, `${query}: ${viaProxy.text}`);
        assert.equal(viaProxy.text, direct.text, query);
      }
    }
  });

  test('an HTTP/1.0 request without Host is answered by a replica at once (it took the shard down)', async () => {
    // nginx forwarded an empty Host; uWS held the request ~8 s and nginx then marked the replica
    // failed (max_fails=1): a few such requests made the shard answer 503 to everyone
    const port = Number(new URL(proxy).port);
    const t0 = Date.now();
    const head = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1', () => sock.write('GET /contacts/message-search HTTP/1.0\r\n\r\n'));
      let text = '';
      sock.on('data', (d) => (text += d));
      sock.on('close', () => resolve(text));
      sock.on('error', reject);
    });
    assert.match(head, /^HTTP\/1\.1 401 /, head);
    assert.ok(Date.now() - t0 < 3000, `answered after ${Date.now() - t0} ms`);
  });

  test("nginx's own errors have the contract's JSON body and headers (they were nginx's HTML pages)", async () => {
    const json = async (res: Response, status: number, error: string, requestId?: string) => {
      const text = await res.text();
      assert.equal(res.status, status, text);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const body = JSON.parse(text) as { error: string; request_id: string };
      assert.equal(body.error, error);
      assert.equal(body.request_id, res.headers.get('x-request-id'));
      if (requestId) assert.equal(body.request_id, requestId);
      return res;
    };
    // a target past nginx's 64 KiB buffers (the replicas' own 414 is at 32,768 characters)
    await json(await fetch(`${proxy}/contacts/message-search?q=${'a'.repeat(70_000)}`), 414, 'uri_too_long');
    // every replica of a shard down: 503 with Retry-After, the caller's X-Request-Id echoed
    const [org, server] = [...shardOf].find(([, s]) => s === b)!;
    await server.stop();
    const down = await json(
      await fetch(`${proxy}/contacts/message-search?organization_id=${org}&q=pedido`, {
        headers: { authorization: `Bearer ${key.key}`, 'x-request-id': 'via-nginx-2' },
      }),
      503,
      'unavailable',
      'via-nginx-2',
    );
    assert.equal(down.headers.get('retry-after'), '1');
  });

  test("with SUNSET_AT, nginx's own errors carry the replicas' Sunset and Deprecation; a bad one: exit 1", async () => {
    const bad = await routing(['nginx', '--shards', path.join(prefix.dir, 'shards.json')], { SUNSET_AT: 'soon' });
    assert.equal(bad.code, 1, bad.stderr);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^config: SUNSET_AT must be an RFC 3339 date-time with offset .*, got "soon"\n$/);
    // every upstream refuses: nginx answers the 503 itself
    const file = path.join(prefix.dir, 'dead.json');
    writeFileSync(
      file,
      JSON.stringify({
        shards: [{ name: 'a', upstreams: ['127.0.0.1:1'], organizations: ['00000000-0000-4000-8000-000000000001'] }],
      }),
    );
    const port = await freePort();
    const conf = await routing(['nginx', '--shards', file, '--listen', `127.0.0.1:${port}`], {
      SUNSET_AT: '2026-12-31T12:00:00-03:00',
    });
    assert.equal(conf.code, 0, conf.stderr);
    const dir = tempDir('routing-sunset-');
    const confFile = path.join(dir.dir, 'nginx.conf');
    writeFileSync(confFile, conf.stdout);
    const proc = spawn(NGINX!, ['-c', confFile, '-p', dir.dir, '-g', 'daemon off;'], { stdio: 'ignore' });
    try {
      let res: Response | null = null;
      await waitFor(`nginx on port ${port}`, 10_000, async () => {
        try {
          res = await fetch(`http://127.0.0.1:${port}/contacts/message-search?q=x`);
          return true;
        } catch {
          return false;
        }
      });
      const r = res as unknown as Response;
      assert.equal(r.status, 503);
      assert.equal(JSON.parse(await r.text()).error, 'unavailable');
      // as the replicas send it (commonHeaders): the instant as an HTTP-date
      assert.equal(r.headers.get('sunset'), 'Thu, 31 Dec 2026 15:00:00 GMT');
      assert.equal(r.headers.get('deprecation'), 'true');
    } finally {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGQUIT');
      await exited;
      dir.cleanup();
    }
  });
});
