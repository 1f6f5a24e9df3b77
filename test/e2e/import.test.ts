/** Import: validation through readImport, and the real CLI (`src/cli/snapshot.ts`) against both stores. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readImport } from '../../src/import/importer.js';
import { ImportError } from '../../src/import/import-error.js';
import { Redis } from 'ioredis';
import { EmbeddedStore } from '../../src/store/embedded-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Stores } from '../../src/store/stores.js';
import { unprepared } from '../helpers/prepared.js';
import { startRedis, type TestRedis } from '../helpers/redis-server.js';
import { generate, ndjson, orgData, uuid } from '../fixtures/gen-data.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(path.join(tmpdir(), 'import-test-'));
let fileNo = 0;

/** Writes a fixture file; the number prefix keeps names unique (errors name the base name). */
function file(name: string, text: string): string {
  const p = path.join(tmp, `${fileNo++}-${name}`);
  writeFileSync(p, text);
  return p;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function snapshotCli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/snapshot.ts', ...args],
      {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: '', DATA_DIR: '', ...env },
      },
      (err, stdout, stderr) => resolve({ code: err ? (err.code as number) : 0, stdout, stderr }),
    );
  });
}

/** `snapshot import` of records written to two fresh files (`more`: extra flags). */
function importRecords(
  records: { contacts: object[]; messages: object[] },
  env: Record<string, string>,
  more: string[] = [],
): Promise<Run> {
  return snapshotCli(
    [
      'import',
      '--contacts',
      file('c.ndjson', ndjson(records.contacts)),
      '--messages',
      file('m.ndjson', ndjson(records.messages)),
      ...more,
    ],
    env,
  );
}

async function importError(contacts: string, messages: string): Promise<string> {
  try {
    await readImport(file('contacts.ndjson', contacts), file('messages.ndjson', messages));
  } catch (err) {
    assert.ok(err instanceof ImportError, String(err));
    return err.detail.replace(/^\d+-/, '');
  }
  assert.fail('import succeeded');
}

describe('import validation', () => {
  const g = generate(1, 3, 6);
  const contacts = ndjson(g.contacts);

  test('BOM, CRLF, blank lines, upper-case UUIDs, empty content and name are accepted', async () => {
    const lines = g.messages.map((m) => JSON.stringify({ ...m, contact_id: m.contact_id.toUpperCase() }));
    // white space lines as CONTRACT 10 reads it (\s): \f and \v alone too (a CLI audit)
    const text = '\uFEFF' + lines[0] + '\r\n\r\n   \n\f\n\v\r\n\u3000\n' + lines.slice(1).join('\r\n') + '\r\n\n';
    const cs = ndjson(g.contacts.map((c, i) => ({ ...c, id: c.id.toUpperCase(), name: i === 0 ? '' : c.name })));
    const data = await readImport(file('contacts.ndjson', cs), file('messages.ndjson', text));
    assert.equal(data.contacts, 3);
    assert.equal(data.messages, 6);
    // the import prepares each message's text as it reads it (OrgData.prepared): read it back
    const built = unprepared(data.organizations.get(uuid(1, 0))!.build());
    const expected = orgData(g);
    expected.contacts[0].name = '';
    assert.deepEqual(built, expected);
  });

  const bad = (i: number, patch: object): string =>
    ndjson(g.messages.map((m, j) => (j === i ? { ...m, ...patch } : m)));

  const cases: [string, () => Promise<string>, RegExp][] = [
    [
      'bad sent_at',
      () => importError(contacts, bad(3, { sent_at: '2024-13-01' })),
      /^messages\.ndjson line 4: field "sent_at": expected an RFC 3339 date-time with offset, got "2024-13-01"$/,
    ],
    [
      'sent_at without offset',
      () => importError(contacts, bad(0, { sent_at: '2024-01-01T10:00:00' })),
      /line 1: field "sent_at"/,
    ],
    [
      'missing field',
      () => importError(contacts, ndjson(g.messages.map((m, j) => (j === 2 ? { ...m, content: undefined } : m)))),
      /^messages\.ndjson line 3: field "content": missing$/,
    ],
    [
      'a BOM inside the file: shown, not invisible, in the message',
      () => importError(contacts, ndjson(g.messages.slice(0, 1)) + '\uFEFF' + ndjson(g.messages.slice(1))),
      /^messages\.ndjson line 2: invalid JSON: Unexpected token '\\ufeff'/,
    ],
    [
      'mistyped field',
      () => importError(contacts, bad(1, { content: 5 })),
      /^messages\.ndjson line 2: field "content": expected a string, got 5$/,
    ],
    [
      'bad channel',
      () => importError(contacts, bad(1, { channel: 'sms' })),
      /line 2: field "channel": expected one of whatsapp, .*, got "sms"$/,
    ],
    [
      'bad direction',
      () => importError(contacts, bad(1, { direction: 'all' })),
      /line 2: field "direction": .*got "all"$/,
    ],
    [
      'invalid JSON',
      () => importError(contacts, ndjson(g.messages) + '{"id": \n'),
      /^messages\.ndjson line 7: invalid JSON/,
    ],
    [
      'not an object',
      () => importError(contacts, '[1,2]\n'),
      /^messages\.ndjson line 1: expected a JSON object, got \[1,2\]$/,
    ],
    [
      'bad contact UUID',
      () => importError(ndjson([{ ...g.contacts[0], id: 'nope' }]), ''),
      /^contacts\.ndjson line 1: field "id": expected a UUID, got "nope"$/,
    ],
    [
      'mistyped nullable',
      () => importError(ndjson([{ ...g.contacts[0], phone: 12 }]), ''),
      /field "phone": expected a string or null, got 12$/,
    ],
    [
      'duplicate contact id',
      () => importError(contacts + JSON.stringify(g.contacts[1]) + '\n', ''),
      /^contacts\.ndjson line 4: field "id": duplicate contact id/,
    ],
    [
      'duplicate message id',
      () => importError(contacts, bad(4, { id: 'm-1' })),
      /^messages\.ndjson line 5: field "id": duplicate message id "m-1"/,
    ],
    [
      'unknown contact',
      () => importError(contacts, bad(5, { contact_id: uuid(99, 99) })),
      /^messages\.ndjson line 6: field "contact_id": no contact/,
    ],
    [
      'organization mismatch',
      () => importError(contacts + ndjson(generate(2, 1, 0).contacts), bad(0, { organization_id: uuid(2, 0) })),
      /^messages\.ndjson line 1: field "organization_id": ".*" differs from the organization .* of contact/,
    ],
  ];
  for (const [name, run, re] of cases) test(`refused: ${name}`, async () => assert.match(await run(), re));

  test('the same message id in two organizations is fine', async () => {
    const h = generate(2, 1, 2);
    const data = await readImport(
      file('c.ndjson', contacts + ndjson(h.contacts)),
      file('m.ndjson', ndjson([...g.messages, ...h.messages])),
    );
    assert.equal(data.messages, 8);
  });
});

for (const kind of ['embedded', 'redis'] as const) {
  describe(`snapshot CLI, ${kind} store`, () => {
    let redis: TestRedis | undefined;
    let env: Record<string, string>;
    let store: Stores;
    before(async () => {
      if (kind === 'redis') {
        redis = await startRedis();
        env = { REDIS_URL: redis.url };
        store = await RedisStore.connect(redis.url);
      } else {
        const dir = mkdtempSync(path.join(tmpdir(), 'import-cli-'));
        env = { DATA_DIR: dir };
        store = await new EmbeddedStore(dir).open();
      }
    });
    after(async () => {
      await store.close();
      await redis?.stop();
    });

    const a = generate(1, 200, 20000, 1),
      b = generate(2, 10, 100, 1);
    const contacts = file('contacts.ndjson', ndjson([...a.contacts, ...b.contacts]));
    const messages = file('messages.ndjson', ndjson([...a.messages, ...b.messages]));

    test('imports good files and prints a JSON summary', async () => {
      const r = await snapshotCli(['import', '--contacts', contacts, '--messages', messages, '--json'], env);
      assert.equal(r.code, 0, r.stderr);
      const s = JSON.parse(r.stdout);
      assert.equal(s.contacts, 210);
      assert.equal(s.messages, 20100);
      assert.deepEqual(s.organizations.map((o: { organization_id: string }) => o.organization_id).sort(), [
        uuid(1, 0),
        uuid(2, 0),
      ]);
      const refs = await store.snapshots.latest();
      assert.deepEqual(
        await store.snapshots.loadSnapshot(refs.find((x) => x.organizationId === uuid(2, 0))!),
        orgData(b),
      );
    });

    /** What the store holds: pointers, and every snapshot version written (files or Redis keys). */
    async function storeContents(): Promise<{ pointers: unknown; versions: string[]; folders?: string[] }> {
      const pointers = (await store.snapshots.latest()).sort((x, y) => (x.organizationId < y.organizationId ? -1 : 1));
      let versions: string[];
      if (kind === 'redis') {
        const raw = new Redis(redis!.url);
        versions = (await raw.keys('snap:*:v:*')).sort();
        raw.disconnect();
      } else {
        const root = path.join(env.DATA_DIR, 'snapshots');
        versions = existsSync(root)
          ? readdirSync(root, { recursive: true, encoding: 'utf8' })
              .filter((f) => /(\.snap|\.tmp-[^/]*)$/.test(f))
              .sort()
          : [];
        // organization folders too: an interrupted import of new organizations left them empty
        const folders = existsSync(root)
          ? readdirSync(root)
              .filter((f) => !f.startsWith('.'))
              .sort()
          : [];
        return { pointers, versions, folders };
      }
      return { pointers, versions };
    }

    /** Spawns `snapshot import`, sends `signal` once `ready` holds (polled every 10 ms), resolves to the run. */
    async function interruptImport(
      files: { contacts: string; messages: string },
      signal: NodeJS.Signals,
      ready: (pid: number) => Promise<boolean>,
    ): Promise<Run & { sent: boolean }> {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/cli/snapshot.ts',
          'import',
          '--contacts',
          files.contacts,
          '--messages',
          files.messages,
        ],
        { cwd: ROOT, env: { ...process.env, REDIS_URL: '', DATA_DIR: '', ...env } },
      );
      let stdout = '',
        stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number>((resolve) =>
        child.on('close', (code, sig) => resolve(code ?? (sig === null ? -1 : -2))),
      );
      let sent = false,
        done = false;
      void exited.then(() => (done = true));
      while (!done) {
        if (await ready(child.pid!)) {
          sent = child.kill(signal);
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      return { code: await exited, stdout, stderr, sent };
    }

    // ~180k messages in 120 organizations: ~1-2 s of reading, then 120 stages one after another
    const many = Array.from({ length: 120 }, (_, i) => generate(300 + i, 20, 1500, 1));
    const manyFiles = {
      contacts: file('many-contacts.ndjson', ndjson(many.flatMap((g) => g.contacts))),
      messages: file('many-messages.ndjson', ndjson(many.flatMap((g) => g.messages))),
    };

    test('SIGINT while staging: exit 130, nothing published, what was staged removed', async () => {
      const before = await storeContents();
      const r = await interruptImport(manyFiles, 'SIGINT', async () => {
        const now = await storeContents();
        return now.versions.length > before.versions.length;
      });
      assert.ok(r.sent, `the import ended before it was interrupted: ${r.code} ${r.stderr}`);
      assert.equal(r.code, 130, r.stderr);
      assert.match(
        r.stderr,
        /^snapshot: SIGINT: stopping once the organizations being written are \(up to 8\); nothing will be published/m,
      );
      assert.match(
        r.stderr,
        /^snapshot: interrupted \(SIGINT\): nothing was published, and what was staged was removed$/m,
      );
      assert.equal(r.stdout, '');
      assert.deepEqual(await storeContents(), before);
    });

    test('SIGTERM while reading: exit 143 at once, nothing written', async () => {
      const before = await storeContents();
      // reading has begun once the process holds the messages file open
      const r = await interruptImport(manyFiles, 'SIGTERM', async (pid) => {
        try {
          return readdirSync(`/proc/${pid}/fd`).some((fd) => {
            try {
              return readlinkSync(`/proc/${pid}/fd/${fd}`) === manyFiles.messages;
            } catch {
              return false;
            }
          });
        } catch {
          return false;
        }
      });
      assert.ok(r.sent, `the import ended before it was interrupted: ${r.code} ${r.stderr}`);
      assert.equal(r.code, 143, r.stderr);
      // (after the progress lines of a stderr that is not a terminal)
      assert.match(r.stderr, /\nsnapshot: interrupted \(SIGTERM\) while reading the files: nothing was written\n$/);
      assert.deepEqual(await storeContents(), before);
    });

    test('a bad line at the end of a big file changes nothing', async () => {
      const before = await store.snapshots.latest();
      const a2 = generate(1, 200, 20000, 2);
      const text =
        ndjson([...a2.messages, ...b.messages]) +
        JSON.stringify({ ...b.messages[0], id: 'last', sent_at: '2024-13-01' }) +
        '\n';
      const bad = file('messages.ndjson', text);
      const r = await snapshotCli(['import', '--contacts', contacts, '--messages', bad], env);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        /^snapshot: \d+-messages\.ndjson line 20101: field "sent_at": expected an RFC 3339 date-time with offset, got "2024-13-01"\n/m,
      );
      assert.doesNotMatch(r.stderr, /at .*\.ts:\d+/); // no stack trace
      assert.deepEqual(await store.snapshots.latest(), before);
    });

    test('a re-import replaces one organization and leaves the others', async () => {
      const before = new Map((await store.snapshots.latest()).map((r) => [r.organizationId, r.version]));
      const b2 = generate(2, 12, 130, 3);
      const r = await importRecords(b2, env);
      assert.equal(r.code, 0, r.stderr);
      const after = new Map((await store.snapshots.latest()).map((x) => [x.organizationId, x.version]));
      assert.equal(after.get(uuid(1, 0)), before.get(uuid(1, 0)));
      assert.ok(after.get(uuid(2, 0))! > before.get(uuid(2, 0))!);
      assert.deepEqual(
        await store.snapshots.loadSnapshot({ organizationId: uuid(2, 0), version: after.get(uuid(2, 0))! }),
        orgData(b2),
      );
    });

    test('an empty messages file publishes the contacts, with no messages', async () => {
      // an organization with contacts and no message yet; the file is 0 bytes, not blank lines
      const c = generate(3, 4, 0, 1);
      const r = await importRecords({ contacts: c.contacts, messages: [] }, env, ['--json']); // ndjson([]) is ''
      assert.equal(r.code, 0, r.stderr);
      const s = JSON.parse(r.stdout);
      assert.deepEqual([s.contacts, s.messages, s.organizations.length], [4, 0, 1]);
      const ref = (await store.snapshots.latest()).find((x) => x.organizationId === uuid(3, 0));
      assert.ok(ref);
      assert.deepEqual(await store.snapshots.loadSnapshot(ref), orgData(c));
    });

    if (kind === 'embedded') {
      test('bad usage exits 2 with a message', async () => {
        const r1 = await snapshotCli(['import', '--contacts', contacts], env);
        assert.equal(r1.code, 2);
        assert.match(r1.stderr, /^snapshot: missing --messages FILE\n/);
        const r2 = await snapshotCli(['import', '--contacts', contacts, '--messages', '/nonexistent/m.ndjson'], env);
        assert.equal(r2.code, 2);
        assert.match(r2.stderr, /cannot read "\/nonexistent\/m\.ndjson" \(no such file\)/);
        const r3 = await snapshotCli(['--help'], env);
        assert.equal(r3.code, 0);
        assert.match(r3.stdout, /^Usage: npm run snapshot/);
        // the last of two used to win, silently
        const r4 = await snapshotCli(
          ['import', '--contacts', contacts, '--contacts', contacts, '--messages', messages],
          env,
        );
        assert.equal(r4.code, 2);
        assert.match(r4.stderr, /^snapshot: --contacts given more than once\n/);
        const r5 = await snapshotCli(['list', '--messages', messages], env);
        assert.equal(r5.code, 2);
        assert.match(r5.stderr, /^snapshot: list takes no --messages\n/);
      });

      test('a pipe, a device or a directory as a file: exit 2 naming the flag, nothing published', async () => {
        // a pipe has no size to split into ranges: read that way it published every organization
        // with no messages and exited 0
        const before = await store.snapshots.latest();
        const fifo = path.join(tmp, 'messages.fifo');
        execFileSync('mkfifo', [fifo]);
        const cases: Array<[string[], RegExp]> = [
          [
            ['--contacts', contacts, '--messages', fifo],
            /^snapshot: --messages: ".*messages\.fifo" is not a regular file/,
          ],
          [
            ['--contacts', '/dev/null', '--messages', messages],
            /^snapshot: --contacts: "\/dev\/null" is not a regular file/,
          ],
          [
            ['--contacts', contacts, '--messages', tmp],
            /^snapshot: --messages: ".*" is a directory, not an NDJSON file/,
          ],
        ];
        for (const [flags, message] of cases) {
          const r = await snapshotCli(['import', ...flags], env);
          assert.equal(r.code, 2, r.stderr);
          assert.match(r.stderr, message);
        }
        assert.deepEqual(await store.snapshots.latest(), before);
      });

      test('on a terminal, a failed import prints its error and exits (the progress bar is stopped)', async (t) => {
        // `script` runs the CLI on a pseudo-terminal, where the progress is a bar redrawn on a timer
        if (spawnSync('script', ['--version']).status !== 0) return t.skip('no script(1) here');
        const before = await store.snapshots.latest();
        const bad = file('messages.ndjson', ndjson([...b.messages, { ...b.messages[0] }]));
        const command = [
          process.execPath,
          '--import',
          'tsx',
          'src/cli/snapshot.ts',
          'import',
          '--contacts',
          contacts,
          '--messages',
          bad,
        ]
          .map((x) => `'${x}'`)
          .join(' ');
        const r = spawnSync('script', ['-qec', command, '/dev/null'], {
          cwd: ROOT,
          env: { ...process.env, REDIS_URL: '', ...env },
          timeout: 30_000,
          encoding: 'utf8',
        });
        assert.equal(r.error, undefined, 'it exited by itself');
        assert.equal(r.status, 1, r.stdout);
        assert.match(r.stdout, /field "id": duplicate message id/);
        assert.match(r.stdout, /snapshot: nothing was published/);
        assert.deepEqual(await store.snapshots.latest(), before);
      });
    } else {
      test('Redis down: a clear error, exit 1', async () => {
        const r = await snapshotCli(['import', '--contacts', contacts, '--messages', messages], {
          REDIS_URL: 'redis://127.0.0.1:1',
        });
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^snapshot: store: redis unavailable at redis:\/\/127\.0\.0\.1:1: /);
      });

      test('Redis full while writing the second organization: nothing published, nothing left', async () => {
        // org 5's chunks fill maxmemory (CONTRACT 9: all or nothing); the import writes up to 8
        // organizations at once, so org 4's small write may be the one refused (seen in CI)
        const small = generate(4, 5, 40, 1),
          big = generate(5, 300, 40000, 1);
        const first = await importRecords(small, env);
        assert.equal(first.code, 0, first.stderr);
        const pointers = async () =>
          (await store.snapshots.latest()).sort((a, b) => (a.organizationId < b.organizationId ? -1 : 1));
        const before = await pointers();
        const raw = new Redis(redis!.url);
        try {
          const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))![1]);
          await raw.config('SET', 'maxmemory', String(used + (1 << 20)));
          await raw.config('SET', 'maxmemory-policy', 'noeviction');
          const keysBefore = (await raw.keys('snap:*')).sort();
          const r = await importRecords(
            {
              contacts: [...small.contacts, ...big.contacts],
              messages: [...generate(4, 5, 60, 2).messages, ...big.messages],
            },
            env,
          );
          assert.equal(r.code, 1, r.stdout);
          assert.match(
            r.stderr,
            /^snapshot: store: redis publishing organization 0000000[45]-0000-4000-8000-000000000000: .*OOM.*; nothing was published, and what was staged was removed$/m,
          );
          assert.doesNotMatch(r.stderr, /at .*\.ts:\d+/); // no stack trace
          assert.deepEqual(await pointers(), before, 'no pointer moved');
          // the first organization's staged version and the second's partial one are gone (a
          // version counter stays: numbers are never reused)
          const left = (await raw.keys('snap:*')).filter((k) => !k.endsWith(':seq')).sort();
          assert.deepEqual(
            left,
            keysBefore.filter((k) => !k.endsWith(':seq')),
          );
        } finally {
          await raw.config('SET', 'maxmemory', '0');
          raw.disconnect();
        }
      });
    }
  });
}

describe('snapshot list with a corrupt pointer (embedded store)', () => {
  test('the others are listed, the bad one named escaped on stderr (exit 1); the next import replaces it', async () => {
    // one NUL-filled CURRENT hid every organization (the listing failed whole, NULs sent to the
    // terminal), and its import failed on it too
    const env = { DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bad-pointer-cli-')) };
    const x = generate(7, 5, 50, 1),
      y = generate(8, 5, 50, 1);
    const c = file('bp-contacts.ndjson', ndjson([...x.contacts, ...y.contacts]));
    const m = file('bp-messages.ndjson', ndjson([...x.messages, ...y.messages]));
    assert.equal((await snapshotCli(['import', '--contacts', c, '--messages', m], env)).code, 0);
    writeFileSync(path.join(env.DATA_DIR, 'snapshots', uuid(7, 0), 'CURRENT'), Buffer.alloc(32));
    const listed = await snapshotCli(['list'], env);
    assert.equal(listed.code, 1, listed.stderr);
    assert.equal(listed.stdout, `${uuid(8, 0)} version 1\n`);
    assert.match(
      listed.stderr,
      new RegExp(`^snapshot: store: unreadable pointer of organization ${uuid(7, 0)}: .*\\\\u0000`, 'm'),
    );
    assert.ok(!listed.stderr.includes('\u0000'), 'no raw NUL on the terminal');
    assert.equal((await snapshotCli(['import', '--contacts', c, '--messages', m], env)).code, 0);
    const after = await snapshotCli(['list'], env);
    assert.equal(after.code, 0, after.stderr);
    assert.equal(after.stdout, `${uuid(7, 0)} version 2\n${uuid(8, 0)} version 2\n`);
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  });
});

after(() => rmSync(tmp, { recursive: true, force: true }));
