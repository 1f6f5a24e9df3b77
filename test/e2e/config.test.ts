import { existsSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { availableParallelism } from 'node:os';
/** Configuration from outside: bad values stop the start with a message naming the variable; SUNSET_AT. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig, loadStoreConfig } from '../../src/config/config.js';
import { startRedis } from '../helpers/redis-server.js';
import { baseEnv, freePort, runNode, startServer, tempDataDir } from '../helpers/server.js';

const data = tempDataDir();
after(() => data.cleanup());
const aFile = path.join(data.dir, 'a-file');
writeFileSync(aFile, 'not a folder\n');

describe('bad configuration stops the start (exit 1, no stack trace)', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'abc' }, 'config: PORT must be an integer 1-65535, got "abc"'],
    [{ PORT: '70000' }, 'config: PORT must be an integer 1-65535, got "70000"'],
    [{ ADMIN_PORT: '0' }, 'config: ADMIN_PORT must be an integer 1-65535, got "0"'],
    [
      { LOG_LEVEL: 'loud' },
      'config: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    [
      { REDIS_URL: 'http://localhost:6379' },
      'config: REDIS_URL must be a redis:// or rediss:// URL, got "http://localhost:6379"',
    ],
    // the scheme is right, the port not: the message says what to check (the regression audit)
    [
      { REDIS_URL: 'redis://127.0.0.1:99999' },
      'config: REDIS_URL must be a redis:// or rediss:// URL with a valid host and a port of 1-65535, got "redis://127.0.0.1:99999"',
    ],
    // a URL without a host or with port 0 failed only on connecting; a path that is not a database
    // number made ioredis send SELECT NaN (the tools died with its stack: the operator audit)
    [
      { REDIS_URL: 'redis://' },
      'config: REDIS_URL must be a redis:// or rediss:// URL with a valid host and a port of 1-65535, got "redis://"',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:0' },
      'config: REDIS_URL must be a redis:// or rediss:// URL with a valid host and a port of 1-65535, got "redis://127.0.0.1:0"',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:6379/abc' },
      'config: REDIS_URL may name a database only by its number after the host (redis://host:6379/2), got "redis://127.0.0.1:6379/abc"',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:6379?db=x' },
      'config: REDIS_URL may name a database only by its number after the host (redis://host:6379/2), got "redis://127.0.0.1:6379?db=x"',
    ],
    [
      { REDIS_URL: 'redis://a:1/2,redis://b:2/2' },
      'config: REDIS_URL must not name a database other than 0 in a list of cluster seed nodes (a cluster has only database 0), got "redis://a:1/2,redis://b:2/2"',
    ],
    // the first seed's scheme and credentials are used for every node: a rediss:// second seed went over plain TCP (the fleet audit)
    [
      { REDIS_URL: 'redis://a:1,rediss://b:2' },
      'config: REDIS_URL must give every cluster seed node the same scheme (redis:// or rediss://), user and password: the first one is used for all of them, got "redis://a:1,rediss://b:2"',
    ],
    [
      { REDIS_URL: 'redis://u:secret@a:1,redis://b:2' },
      'config: REDIS_URL must give every cluster seed node the same scheme (redis:// or rediss://), user and password: the first one is used for all of them, got "redis://u:***@a:1,redis://b:2"',
    ],
    [{ SUNSET_AT: '2026-13-01' }, 'config: SUNSET_AT must be an RFC 3339 date-time'],
    // an HTTP-date has four digits of year: these two were sent as "Dec -0001" and "Jan 10000"
    [
      { SUNSET_AT: '0000-01-01T00:00:00+01:00' },
      'config: SUNSET_AT must fall in the years 0000-9999 once in UTC (it is sent as an HTTP-date), got "0000-01-01T00:00:00+01:00"',
    ],
    [
      { SUNSET_AT: '9999-12-31T23:59:59-01:00' },
      'config: SUNSET_AT must fall in the years 0000-9999 once in UTC (it is sent as an HTTP-date), got "9999-12-31T23:59:59-01:00"',
    ],
    [{ HOST: 'not a host' }, 'config: HOST must be a host name or IP address, got "not a host"'],
    [
      { ORGANIZATIONS: '00000000-0000-4000-8000-000000000001,nope' },
      'config: ORGANIZATIONS must be a comma-separated list of organization UUIDs, got "nope" in "00000000-0000-4000-8000-000000000001,nope"',
    ],
    [
      { REDIS_URL: 'redis://a:1,http://b:2' },
      'config: REDIS_URL must be a redis:// or rediss:// URL, or a comma-separated list',
    ],
    [{ SERVER_THREADS: '0' }, 'config: SERVER_THREADS must be an integer 1-256, got "0"'],
    [{ SERVER_THREADS: '257' }, 'config: SERVER_THREADS must be an integer 1-256, got "257"'],
    [{ SERVER_THREADS: 'two' }, 'config: SERVER_THREADS must be an integer 1-256, got "two"'],
    [{ SLOW_CLIENT_BUFFER_MB: '0' }, 'config: SLOW_CLIENT_BUFFER_MB must be an integer 1-1048576 (MiB), got "0"'],
    // set and empty: what a failed `ORGANIZATIONS=$(npm run -s routing -- organizations ...)` leaves;
    // read as unset, a shard's replica loaded and served every organization
    [
      { ORGANIZATIONS: '' },
      'config: ORGANIZATIONS is set but empty: list the organization UUIDs of this replica (comma-separated), or unset it to serve every organization',
    ],
    // the password of a bad REDIS_URL is masked, as at run time
    [
      { REDIS_URL: 'http://:S3CRETpw@localhost:6379' },
      'config: REDIS_URL must be a redis:// or rediss:// URL, got "http://:***@localhost:6379"',
    ],
    // an unencoded '@' or '/' in the password showed part or all of it
    [
      { REDIS_URL: 'http://:p@S3CRET@127.0.0.1:1' },
      'config: REDIS_URL must be a redis:// or rediss:// URL, got "http://:***@127.0.0.1:1"',
    ],
    [{ REDIS_URL: 'redis://a:1,http://:abc/S3CRET@127.0.0.1:6379' }, 'got "redis://a:1,http://:***@127.0.0.1:6379"'],
    // ioredis decodes the user and password: a bad escape was "redis unavailable ...: URI malformed"
    [
      { REDIS_URL: 'redis://:ab%zz@127.0.0.1:6379' },
      `config: REDIS_URL must percent-encode its user and password validly (each '%' followed by two hex digits), got "redis://:***@127.0.0.1:6379"`,
    ],
    // ioredis takes a query's password (and any option) for one node only; it showed in messages
    [
      { REDIS_URL: 'redis://127.0.0.1:6379?password=S3CRET' },
      'config: REDIS_URL may carry no query parameter but db (a password goes before the host: redis://:password@host), got "redis://127.0.0.1:6379?password=***"',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:6379?db=1&db=2' },
      'config: REDIS_URL must name its database once, got "redis://127.0.0.1:6379?db=1&db=2"',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:6379/2?db=3' },
      'config: REDIS_URL must name its database once, got "redis://127.0.0.1:6379/2?db=3"',
    ],
    // an encoded name is the same parameter to ioredis: its value is masked too
    [
      { REDIS_URL: 'redis://127.0.0.1:6379?pass%77ord=S3CRET' },
      'config: REDIS_URL may carry no query parameter but db (a password goes before the host: redis://:password@host), got "redis://127.0.0.1:6379?pass%77ord=***"',
    ],
    [{ DATA_DIR: ' ' }, 'config: DATA_DIR must be a folder path, got " "'],
    // a file where the folder, or one of its parents, should be: it answered 503 for ever
    [
      { DATA_DIR: aFile },
      `start: store: cannot use DATA_DIR ${JSON.stringify(aFile)}: "${aFile}" is a file, not a folder`,
    ],
    [
      { DATA_DIR: path.join(aFile, 'data') },
      `start: store: cannot use DATA_DIR ${JSON.stringify(path.join(aFile, 'data'))}: "${aFile}" is a file, not a folder`,
    ],
    // uWS says only that it could not listen: the variable is named, with why
    [{ HOST: 'notanip.invalid' }, 'HOST "notanip.invalid" is neither an IP address nor a name that resolves'],
    [{ HOST: '256.0.0.1' }, 'HOST "256.0.0.1" is neither an IP address nor a name that resolves'],
    [
      { ADMIN_HOST: '192.0.2.1', PORT: '18996', ADMIN_PORT: '18995' },
      'start: http: cannot listen on 192.0.2.1:18995: ADMIN_HOST "192.0.2.1" is not an address of this machine',
    ],
    // one port for both listeners aborted the process with serving threads (exit 134)
    [
      { PORT: '18999', ADMIN_PORT: '18999' },
      'config: ADMIN_PORT must differ from PORT (both 18999): the admin listener (/healthz, /readyz, /metrics, reloads) needs a port of its own',
    ],
  ];
  for (const [vars, message] of cases) {
    it(
      Object.entries(vars)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
      async () => {
        const r = await runNode('src/main.ts', [], baseEnv({ DATA_DIR: data.dir, ...vars }));
        assert.equal(r.code, 1);
        assert.ok(r.stderr.includes(message), r.stderr);
        assert.ok(!/\n\s+at /.test(r.stderr), 'no stack trace');
        assert.ok(!r.stderr.includes('S3CRET'), r.stderr);
      },
    );
  }
  it('every problem is reported at once (in-process)', () => {
    assert.throws(
      () => loadConfig({ PORT: 'x', LOG_LEVEL: 'y' }),
      (err: Error) => err.message.includes('PORT') && err.message.includes('LOG_LEVEL'),
    );
  });
  it('SERVER_THREADS: 1-256', () => {
    assert.equal(loadConfig({ SERVER_THREADS: '1' }).serverThreads, 1);
    assert.equal(loadConfig({}).serverThreads, Math.min(256, availableParallelism()), 'default: one a core');
    assert.deepEqual(loadConfig({ SERVER_THREADS: '2', RATE_LIMIT_RPS: '10' }).rateLimit, { rps: 10, burst: 10 });
    assert.equal(loadConfig({ SERVER_THREADS: '256' }).serverThreads, 256);
    assert.throws(() => loadConfig({ SERVER_THREADS: '1.5' }), /SERVER_THREADS must be an integer 1-256, got "1.5"/);
  });
  it('defaults', () => {
    assert.deepEqual(loadConfig({}), {
      port: 3000,
      host: '0.0.0.0',
      adminPort: 9464,
      adminHost: '127.0.0.1',
      redisUrl: null,
      dataDir: './data',
      logLevel: 'info',
      sunsetAt: null,
      rateLimit: null,
      shutdownTimeoutMs: 10000,
      slowClientBufferBytes: 256 * 2 ** 20,
      indexBuildThread: 'worker',
      organizations: null,
      serverThreads: Math.min(256, availableParallelism()),
    });
  });
  it('--help prints the usage and exits 0; any other argument is refused with exit 2', async () => {
    const help = await runNode('src/main.ts', ['--help'], baseEnv({ DATA_DIR: data.dir }));
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: npm start/);
    assert.match(help.stdout, /REDIS_URL/);
    const bad = await runNode('src/main.ts', ['--port', '5'], baseEnv({ DATA_DIR: data.dir }));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^server: unknown argument "--port": the server takes none/);
  });
  it('a port already in use stops the start with exit 1, public or admin, one or two serving threads', async () => {
    const port = await freePort();
    const first = await startServer({ DATA_DIR: data.dir, LOG_LEVEL: 'warn' });
    try {
      const taken = new URL(first.url).port;
      const takenAdmin = new URL(first.adminUrl).port;
      for (const threads of ['1', '2']) {
        const r = await runNode(
          'src/main.ts',
          [],
          baseEnv({
            DATA_DIR: data.dir,
            PORT: taken,
            ADMIN_PORT: String(port),
            HOST: '127.0.0.1',
            SERVER_THREADS: threads,
          }),
        );
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${taken} \\(PORT ${taken} is in use`));
        // the admin port is taken after the public one was free: with serving threads this
        // aborted the process (exit 134, uv_loop_close with open handles, a native stack)
        const admin = await runNode(
          'src/main.ts',
          [],
          baseEnv({
            DATA_DIR: data.dir,
            PORT: String(port),
            ADMIN_PORT: takenAdmin,
            HOST: '127.0.0.1',
            SERVER_THREADS: threads,
          }),
        );
        assert.equal(admin.code, 1, admin.stderr);
        assert.equal(
          admin.stderr,
          `start: http: cannot listen on 127.0.0.1:${takenAdmin} (ADMIN_PORT ${takenAdmin} is in use or not permitted)\n`,
        );
      }
    } finally {
      assert.equal(await first.stop(), 0);
    }
  });
});

describe('/readyz while the keys cannot be read', () => {
  it('names the keys (not "still loading"), 1 and 2 serving threads, and turns 200 once they can be read', async () => {
    // a keys.json that is not JSON: /readyz said "The snapshots present at start are still
    // loading." for ever (2 threads), or 200 while every search answered 503 (1 thread)
    for (const threads of ['1', '2']) {
      const dir = tempDataDir();
      try {
        writeFileSync(path.join(dir.dir, 'keys.json'), '{garbage');
        const server = await startServer(
          { DATA_DIR: dir.dir, SERVER_THREADS: threads, LOG_LEVEL: 'warn' },
          { waitReady: false },
        );
        try {
          let body = '';
          let status = 0;
          for (let i = 0; i < 100 && !body.includes('API keys'); i++) {
            await new Promise((r) => setTimeout(r, 100));
            const res = await fetch(`${server.adminUrl}/readyz`).catch(() => null);
            if (res === null) continue;
            status = res.status;
            body = await res.text();
          }
          assert.equal(status, 503, body);
          assert.match(
            JSON.parse(body).message,
            /^The API keys cannot be read yet \(store: reading .*keys\.json: .*\); retrying every second\.$/,
          );
          rmSync(path.join(dir.dir, 'keys.json'));
          let ready = 0;
          for (let i = 0; i < 50 && ready !== 200; i++) {
            await new Promise((r) => setTimeout(r, 100));
            ready = (await fetch(`${server.adminUrl}/readyz`)).status;
          }
          assert.equal(ready, 200, `threads ${threads}`);
        } finally {
          await server.stop();
        }
      } finally {
        dir.cleanup();
      }
    }
  });
});

describe('a stop signal while the server is still starting', () => {
  it('is acted on once the listeners are up: exit 0, the stop logged (it was exit 143, no line)', async () => {
    // a "Redis" that accepts connections and never answers: the start waits on its first
    // connection (the 3 s connect timeout), a window the test sees from the connection itself
    const sockets: net.Socket[] = [];
    let connected!: () => void;
    const firstConnection = new Promise<void>((r) => (connected = r));
    const silent = net.createServer((sock) => {
      sockets.push(sock);
      connected();
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const server = await startServer(
        { REDIS_URL: `redis://127.0.0.1:${port}`, LOG_LEVEL: 'info', SERVER_THREADS: '2' },
        { waitReady: false },
      );
      const exited = new Promise<number | null>((r) => server.child.on('exit', (code) => r(code)));
      await firstConnection;
      server.child.kill('SIGTERM');
      assert.equal(await exited, 0, server.output());
      assert.match(server.output(), /a stop signal came while starting: stopping now/);
      assert.match(server.output(), /"msg":"stopped"/);
    } finally {
      for (const sock of sockets) sock.destroy();
      silent.close();
    }
  });
});

describe('SUNSET_AT', () => {
  it('adds Sunset (HTTP-date) and Deprecation: true to every response', async () => {
    const server = await startServer({
      DATA_DIR: data.dir,
      SUNSET_AT: '2026-12-31T12:00:00-03:00',
      LOG_LEVEL: 'silent',
    });
    try {
      for (const path of ['/contacts/message-search', '/nowhere']) {
        const r = await fetch(server.url + path);
        assert.equal(r.headers.get('sunset'), 'Thu, 31 Dec 2026 15:00:00 GMT');
        assert.equal(r.headers.get('deprecation'), 'true');
      }
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe('the command-line tools read the store settings through the same validation', () => {
  const badUrl = 'config: REDIS_URL must be a redis:// or rediss:// URL, got "http://localhost:6379"';
  const cases: Array<[string, string[]]> = [
    ['src/cli/snapshot.ts', ['list']],
    ['src/cli/reload.ts', []],
    ['src/cli/keys.ts', ['list']],
  ];
  for (const [script, args] of cases) {
    it(`${script} ${args.join(' ')}: a bad REDIS_URL stops it with exit 1, naming the variable`, async () => {
      const r = await runNode(script, args, baseEnv({ DATA_DIR: data.dir, REDIS_URL: 'http://localhost:6379' }));
      assert.equal(r.code, 1);
      assert.equal(r.stderr, `${badUrl}\n`);
    });
  }
  it('snapshot and reload read only REDIS_URL and DATA_DIR: a server-only variable does not stop them', async () => {
    const env = baseEnv({ DATA_DIR: data.dir, PORT: 'abc', SERVER_THREADS: 'two' });
    const list = await runNode('src/cli/snapshot.ts', ['list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    assert.ok(Array.isArray(JSON.parse(list.stdout)));
    const reload = await runNode('src/cli/reload.ts', ['--json'], env);
    assert.equal(reload.code, 0, reload.stderr);
    assert.deepEqual(JSON.parse(reload.stdout), { ok: true, servers: [] });
  });
  it('a REDIS_URL database that Redis refuses stops the server and the tools (it went silently to database 0)', async () => {
    const redis = await startRedis();
    try {
      const url = `${redis.url}/99999`;
      const refused = `store: REDIS_URL ${url} names database 99999, which Redis refuses: ERR DB index is out of range`;
      const server = await runNode('src/main.ts', [], baseEnv({ REDIS_URL: url }));
      assert.equal(server.code, 1);
      assert.equal(server.stderr, `start: ${refused}\n`);
      const keys = await runNode('src/cli/keys.ts', ['list'], baseEnv({ REDIS_URL: url }));
      assert.equal(keys.code, 1);
      assert.equal(keys.stderr, `keys: ${refused}\n`);
      const imported = await runNode(
        'src/cli/snapshot.ts',
        ['import', '--contacts', aFile, '--messages', aFile],
        baseEnv({ REDIS_URL: url }),
      );
      assert.notEqual(imported.code, 0);
      assert.ok(imported.stderr.includes(refused), imported.stderr);
      // a database the server has is used as it is
      const three = await runNode('src/cli/keys.ts', ['list'], baseEnv({ REDIS_URL: `${redis.url}/3` }));
      assert.equal(three.code, 0, three.stderr);
      assert.equal(three.stdout, 'No API keys.\n');
    } finally {
      await redis.stop();
    }
  });
  it('reload --json with the store unreachable: exit 1, the error also as JSON on stdout', async () => {
    const r = await runNode('src/cli/reload.ts', ['--json'], baseEnv({ REDIS_URL: 'redis://127.0.0.1:1' }));
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: string; servers: unknown[] };
    assert.equal(out.ok, false);
    assert.match(out.error, /^store: redis unavailable at redis:\/\/127\.0\.0\.1:1: /);
    assert.deepEqual(out.servers, []);
    assert.equal(r.stderr, `reload: ${out.error}\n`);
  });
  it('reload with a DATA_DIR that does not exist: a note, nothing running, and the folder is not created', async () => {
    // opening the store created it, so the same typo was silent the next time
    const missing = `${data.dir}/no/such/store`;
    for (let run = 0; run < 2; run++) {
      const r = await runNode('src/cli/reload.ts', [], baseEnv({ DATA_DIR: missing }));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^reload: note: DATA_DIR ".*\/no\/such\/store" did not exist/);
      assert.equal(r.stdout, 'reload: no server is running; servers load the newest snapshots when they start\n');
    }
    const org = await runNode(
      'src/cli/reload.ts',
      ['--organization-id', '00000000-0000-4000-8000-000000000001'],
      baseEnv({ DATA_DIR: missing }),
    );
    assert.equal(org.code, 1);
    assert.match(org.stderr, /has no published snapshot: nothing to reload\n$/);
    assert.equal(existsSync(`${data.dir}/no`), false);
  });
  it('loadStoreConfig: the store part of loadConfig, with its defaults and messages', () => {
    assert.deepEqual(loadStoreConfig({}), { redisUrl: null, dataDir: './data' });
    assert.deepEqual(loadStoreConfig({ REDIS_URL: 'redis://h:1', DATA_DIR: '/d', PORT: 'abc' }), {
      redisUrl: 'redis://h:1',
      dataDir: '/d',
    });
    const full = loadConfig({ REDIS_URL: 'redis://h:1', DATA_DIR: '/d' });
    assert.deepEqual({ redisUrl: full.redisUrl, dataDir: full.dataDir }, { redisUrl: 'redis://h:1', dataDir: '/d' });
    assert.throws(() => loadStoreConfig({ REDIS_URL: 'nope' }), {
      message: 'config: REDIS_URL must be a redis:// or rediss:// URL, got "nope"',
    });
  });
});
