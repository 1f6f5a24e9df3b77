/** The keys CLI from outside (CONTRACT 7, 8, 10): output, validation, exit codes, no secrets in list. */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { hashSecret, KEY_PATTERN } from '../../src/auth/api-key.js';
import {
  baseEnv,
  createKey,
  keysCli,
  runNode,
  startServer,
  tempDataDir,
  LISTED_KEY_FIELDS,
} from '../helpers/server.js';

const ORG = '0A0A0A0A-0000-4000-8000-000000000001';
const data = tempDataDir();
const env = baseEnv({ DATA_DIR: data.dir });
after(() => data.cleanup());

describe('keys create / list / revoke', () => {
  it('list: records servers refuse are named on stderr, exit 1, the others listed; revoking one says so (it crashed the listing)', async () => {
    const d = tempDataDir();
    try {
      const e = baseEnv({ DATA_DIR: d.dir });
      const good = await createKey(e, [ORG], 'contacts:read,messages:read');
      const file = path.join(d.dir, 'keys.json');
      const stored = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      stored.zzzzzzzz = { prefix: 'zzzzzzzz', name: 'x' };
      stored.zzzzzzz5 = 5;
      // what a server accepts is listed, its missing fields shown empty
      stored.yyyyyyyy = {
        prefix: 'yyyyyyyy',
        name: { not: 'a string' },
        hash: 'ab'.repeat(32),
        organization_ids: [ORG.toLowerCase()],
        scopes: ['contacts:read', 'messages:read'],
        expires_at: null,
        revoked_at: null,
      };
      writeFileSync(file, JSON.stringify(stored));
      for (const args of [['list'], ['list', '--json']]) {
        const r = await keysCli(args, e);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stdout, new RegExp(good.prefix));
        assert.match(r.stdout, /yyyyyyyy/);
        assert.doesNotMatch(r.stdout, /zzzzzzz/);
        assert.match(
          r.stderr,
          /^keys: list: malformed key record, not listed \(servers refuse it\): zzzzzzzz: hash: /m,
        );
        assert.match(
          r.stderr,
          /^keys: list: malformed key record, not listed \(servers refuse it\): zzzzzzz5: record: not a JSON object$/m,
        );
      }
      const listed = JSON.parse((await keysCli(['list', '--json'], e)).stdout) as Array<Record<string, unknown>>;
      const y = listed.find((r) => r.prefix === 'yyyyyyyy');
      assert.deepEqual([y?.name, y?.created_at, y?.last_used_at], ['', '', null]);
      // it said "already revoked at undefined", exit 0, for a record that is not an object
      const rev = await keysCli(['revoke', 'zzzzzzz5'], e);
      assert.equal(rev.code, 1);
      assert.equal(
        rev.stderr,
        'keys: the record of key zzzzzzz5 is malformed (record: not a JSON object); servers refuse it; fix or delete it in the store\n',
      );
      // keys.json that is not an object: `[]` took a created key and stored nothing (exit 0)
      writeFileSync(file, '[]\n');
      const create = await keysCli(['create', '--organization-id', ORG, '--scopes', 'contacts:read'], e);
      assert.equal(create.code, 1);
      assert.equal(create.stdout, '');
      assert.match(create.stderr, /^keys: store: .*keys\.json.*its content is not a JSON object of key records/);
    } finally {
      d.cleanup();
    }
  });

  it('create --json prints the key once, with its record; list never shows secret or hash', async () => {
    const created = await createKey(
      env,
      [ORG, ORG.toLowerCase(), '0b0b0b0b-0000-4000-8000-000000000002'],
      'contacts:read,messages:read',
      ['--name', 'crm sync', '--expires-at', '2099-01-01T00:00:00Z'],
    );
    assert.match(created.key, KEY_PATTERN);
    assert.equal(created.key.split('_')[2], created.prefix);
    assert.equal(created.name, 'crm sync');
    assert.deepEqual(created.organization_ids, [ORG.toLowerCase(), '0b0b0b0b-0000-4000-8000-000000000002']);
    assert.deepEqual(created.scopes, ['contacts:read', 'messages:read']);
    assert.equal(created.expires_at, '2099-01-01T00:00:00.000Z');
    assert.ok(!Number.isNaN(Date.parse(created.created_at)));

    const human = await keysCli(['create', '--organization-id', ORG, '--scopes', 'messages:read'], env);
    assert.equal(human.code, 0, human.stderr);
    const humanKey = /crm_live_[a-z0-9]{8}_[A-Za-z0-9]{32}/.exec(human.stdout);
    assert.ok(humanKey, human.stdout);

    const list = await keysCli(['list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const records = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    assert.equal(records.length, 2);
    for (const r of records) {
      assert.deepEqual(Object.keys(r).sort(), LISTED_KEY_FIELDS);
    }
    for (const key of [created.key, humanKey[0]]) {
      const secret = key.slice(-32);
      assert.ok(!list.stdout.includes(secret) && !list.stdout.includes(hashSecret(secret)));
    }
    const humanList = await keysCli(['list'], env);
    assert.equal(humanList.code, 0);
    assert.ok(humanList.stdout.includes(created.prefix) && !humanList.stdout.includes(created.key));

    const revoke = await keysCli(['revoke', created.prefix], env);
    assert.equal(revoke.code, 0, revoke.stderr);
    const after = JSON.parse((await keysCli(['list', '--json'], env)).stdout) as Array<{
      prefix: string;
      revoked_at: string | null;
    }>;
    assert.ok(after.find((r) => r.prefix === created.prefix)!.revoked_at);
  });

  it('revoke of an unknown prefix: exit 1 with a clear message', async () => {
    const r = await keysCli(['revoke', 'zzzzzzzz'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no key with prefix zzzzzzzz/);
  });

  const usage: Array<[string, string[], RegExp]> = [
    [
      'bad UUID',
      ['create', '--organization-id', 'not-a-uuid', '--scopes', 'contacts:read'],
      /--organization-id must be a UUID, got "not-a-uuid"/,
    ],
    ['no organization', ['create', '--scopes', 'contacts:read'], /--organization-id is required/],
    [
      'unknown scope',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read,webhooks:manage'],
      /--scopes: unknown scope "webhooks:manage"/,
    ],
    ['no scopes', ['create', '--organization-id', ORG], /--scopes is required/],
    [
      'past expiry',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read', '--expires-at', '2020-01-01T00:00:00Z'],
      /--expires-at must be in the future/,
    ],
    [
      'an expiry in year 10000 once in UTC (it was stored as "+010000-...")',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read', '--expires-at', '9999-12-31T23:59:59-01:00'],
      /--expires-at must fall before the year 10000 once in UTC, got "9999-12-31T23:59:59-01:00"/,
    ],
    [
      'malformed expiry',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read', '--expires-at', 'tomorrow'],
      /--expires-at must be an ISO 8601 date-time or YYYY-MM-DD, got "tomorrow"/,
    ],
    [
      'unknown flag',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read', '--admin'],
      /Unknown option '--admin'/,
    ],
    [
      'a single-valued option given twice (the last one used to win, silently)',
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read,messages:read', '--scopes', 'contacts:read'],
      /^keys: --scopes given more than once\n/,
    ],
    ['no command (the usage goes to stderr)', [], /^keys: missing command\nusage:/],
    ['unknown command', ['rotate'], /unknown command "rotate"/],
    ['bad prefix form', ['revoke', 'NOPE'], /a prefix is 8 characters/],
  ];
  for (const [name, args, message] of usage) {
    it(`usage error, exit 2: ${name}`, async () => {
      const r = await keysCli(args, env);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.ok(!/\n\s+at /.test(r.stderr), 'no stack trace');
    });
  }
});

describe('keys: help, names, a missing store folder', () => {
  it('--help after a command prints the usage, exit 0', async () => {
    for (const command of ['create', 'list', 'revoke']) {
      const r = await keysCli([command, '--help'], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^usage:\n {2}npm run keys -- create/);
    }
  });
  it('a name with control characters is shown escaped, not sent to the terminal', async () => {
    const r = await keysCli(
      ['create', '--organization-id', ORG, '--scopes', 'contacts:read', '--name', 'a\nb\u001b[31mred'],
      env,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Created API key [a-z0-9]{8} \(a\\u000ab\\u001b\[31mred\)\n/);
  });
  it('listing in a DATA_DIR that does not exist says so on stderr (a mistyped path), exit 0', async () => {
    const missing = path.join(data.dir, 'no-such-folder');
    const r = await keysCli(['list', '--json'], { ...env, DATA_DIR: missing });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '[]\n');
    assert.equal(
      r.stderr,
      `keys: note: DATA_DIR ${JSON.stringify(missing)} did not exist (nothing was ever stored there): check the path\n`,
    );
    // not made either: the next run with the same typo says so again
    assert.equal(existsSync(missing), false);
  });
  it('read-only commands in a DATA_DIR that does not exist leave it absent: keys revoke, snapshot list', async () => {
    const missing = path.join(data.dir, 'no-such-folder-either');
    const note = (tool: string) =>
      `${tool}: note: DATA_DIR ${JSON.stringify(missing)} did not exist (nothing was ever stored there): check the path\n`;
    const revoke = await keysCli(['revoke', 'abcdefgh'], { ...env, DATA_DIR: missing });
    assert.equal(revoke.code, 1);
    assert.equal(revoke.stderr, `${note('keys')}keys: no key with prefix abcdefgh\n`);
    const list = await runNode('src/cli/snapshot.ts', ['list', '--json'], { ...env, DATA_DIR: missing });
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout, '[]\n');
    assert.equal(list.stderr, note('snapshot'));
    assert.equal(existsSync(missing), false);
  });
  it('a DATA_DIR under a file: the read-only commands name the file and exit 1, as the server does', async () => {
    // they said "did not exist (nothing was ever stored there)" and exited 0 (an operator audit)
    const file = path.join(data.dir, 'a-file');
    writeFileSync(file, 'not a folder\n');
    // and DATA_DIR itself a file: ENOTDIR from a mkdir (a regression audit)
    for (const dataDir of [path.join(file, 'sub'), file]) {
      const why = `store: cannot use DATA_DIR ${JSON.stringify(dataDir)}: ${JSON.stringify(file)} is a file, not a folder\n`;
      const list = await keysCli(['list'], { ...env, DATA_DIR: dataDir });
      assert.equal(list.code, 1);
      assert.equal(list.stderr, `keys: ${why}`);
      const snapshots = await runNode('src/cli/snapshot.ts', ['list'], { ...env, DATA_DIR: dataDir });
      assert.equal(snapshots.code, 1);
      assert.equal(snapshots.stderr, `snapshot: ${why}`);
      const reload = await runNode('src/cli/reload.ts', [], { ...env, DATA_DIR: dataDir });
      assert.equal(reload.code, 1);
      assert.equal(reload.stderr, `reload: ${why}`);
      // the writing ones too (they said "ENOTDIR: not a directory, mkdir ...": a CLI audit)
      const create = await keysCli(['create', '--organization-id', ORG, '--scopes', 'contacts:read'], {
        ...env,
        DATA_DIR: dataDir,
      });
      assert.equal(create.code, 1);
      assert.equal(create.stderr, `keys: ${why}`);
    }
  });
});

describe('keys list into a pipe its reader closed (`keys list | head -1`)', () => {
  it('ends with exit 0 and no stack trace', async () => {
    await createKey(env, [ORG], 'messages:read');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', 'list', '--json'], {
      cwd: path.resolve(import.meta.dirname, '..', '..'),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // the reader goes before anything is written: the first write fails with EPIPE
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
});

describe('keys create whose key cannot be shown (CONTRACT 7: the key is shown once)', () => {
  const root = path.resolve(import.meta.dirname, '..', '..');
  /** Runs `keys create` with stdout as `stdout` (a spawn stdio value); its exit code, stderr and the keys stored after. */
  const createInto = async (stdout: 'ignore' | 'pipe' | number, name: string, closeReader = false) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/keys.ts',
        'create',
        '--organization-id',
        ORG,
        '--scopes',
        'messages:read',
        '--name',
        name,
      ],
      { cwd: root, env, stdio: ['ignore', stdout, 'pipe'] },
    );
    if (closeReader) child.stdout!.destroy();
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const list = await keysCli(['list', '--json'], env);
    const records = JSON.parse(list.stdout) as Array<{ name: string; revoked_at: string | null }>;
    return { code, stderr, records };
  };

  it('stdout to /dev/null (or closed: Node opens /dev/null in its place): exit 1, nothing created', async () => {
    const before = (await keysCli(['list', '--json'], env)).stdout;
    const r = await createInto('ignore', 'discarded');
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'keys: create: standard output is /dev/null or closed, so the new key would never be shown; nothing was created\n',
    );
    assert.deepEqual(r.records, JSON.parse(before), 'no key stored');
  });

  it('a reader that closed the pipe (EPIPE): exit 1, the stored key revoked (it exited 0 with an unseen active key)', async () => {
    const r = await createInto('pipe', 'unseen', true);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^keys: create: could not write the new key to standard output \(EPIPE\); key [a-z0-9]{8} was revoked, nothing usable was created\n$/,
    );
    assert.notEqual(r.records.find((k) => k.name === 'unseen')?.revoked_at ?? null, null, 'revoked');
  });

  it('a full disk (/dev/full, ENOSPC): exit 1, one line, the key revoked (it printed a stack trace)', async () => {
    const fd = openSync('/dev/full', 'w');
    try {
      const r = await createInto(fd, 'lost');
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        /^keys: create: could not write the new key to standard output \(ENOSPC\); key [a-z0-9]{8} was revoked/,
      );
      assert.notEqual(r.records.find((k) => k.name === 'lost')?.revoked_at ?? null, null, 'revoked');
      // any other command: one line, exit 1
      const list = spawn(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', 'list'], {
        cwd: root,
        env,
        stdio: ['ignore', fd, 'pipe'],
      });
      let stderr = '';
      list.stderr!.on('data', (d) => (stderr += d));
      assert.equal(await new Promise<number | null>((resolve) => list.on('close', resolve)), 1);
      assert.equal(stderr, 'keys: cannot write to standard output: ENOSPC: no space left on device, write\n');
    } finally {
      closeSync(fd);
    }
  });
});

describe('the listing tools on a read-only DATA_DIR (a read-only mount)', () => {
  it('keys list, snapshot list and reload work; keys create names DATA_DIR and the error', async (t) => {
    // they refused with EROFS although none of them writes (lifecycle audit); only a real
    // read-only mount shows it (root writes through file modes), so the test mounts a tmpfs
    const dir = mkdtempSync(path.join(tmpdir(), 'ro-data-'));
    const mount = (args: string[]) => spawnSync('mount', args, { stdio: 'ignore' }).status === 0;
    if (!mount(['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir])) {
      rmSync(dir, { recursive: true, force: true });
      t.skip('mounting a tmpfs is not permitted here');
      return;
    }
    try {
      const roEnv = baseEnv({ DATA_DIR: dir, ADMIN_PORT: '1' });
      const created = await createKey(roEnv, [ORG], 'contacts:read,messages:read', ['--name', 'ro']);
      mkdirSync(path.join(dir, 'snapshots'), { recursive: true });
      assert.ok(mount(['-o', 'remount,ro', dir]), 'remount read-only');
      const keys = await keysCli(['list', '--json'], roEnv);
      assert.equal(keys.code, 0, keys.stderr);
      assert.deepEqual(
        (JSON.parse(keys.stdout) as Array<{ prefix: string }>).map((r) => r.prefix),
        [created.prefix],
      );
      const snapshots = await runNode('src/cli/snapshot.ts', ['list'], roEnv);
      assert.equal(snapshots.code, 0, snapshots.stderr);
      assert.match(snapshots.stdout + snapshots.stderr, /no snapshot published yet/);
      const reload = await runNode('src/cli/reload.ts', [], roEnv);
      assert.equal(reload.code, 0, reload.stderr);
      assert.match(reload.stderr + reload.stdout, /no server is running/);
      const create = await keysCli(['create', '--organization-id', ORG, '--scopes', 'messages:read'], roEnv);
      assert.equal(create.code, 1);
      assert.match(create.stderr, /store: cannot use DATA_DIR ".*": EROFS/);
      // A server serves what the folder holds, and its log says so: it said "unavailable at
      // start; serving 503 and retrying" and was ready 13 ms later (an operator audit).
      const server = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
      try {
        const res = await fetch(`${server.url}/contacts/message-search?organization_id=${ORG}&q=hello`, {
          headers: { Authorization: `Bearer ${created.key}` },
        });
        assert.equal(res.status, 200, await res.text());
        assert.match(server.output(), /store: DATA_DIR cannot be written: serving the snapshots it holds/);
        assert.doesNotMatch(server.output(), /unavailable at start/);
      } finally {
        await server.stop();
      }
    } finally {
      spawnSync('umount', [dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
