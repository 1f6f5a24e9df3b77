/**
 * SERVER_THREADS=2 from outside: a serving thread that throws under load is replaced, the other
 * thread keeps answering, and only requests in flight on the dead thread may fail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OrgDataBuilder } from '../../src/model/org-data-builder.js';
import { openStores } from '../../src/store/open-store.js';
import {
  baseEnv,
  createKey,
  freshGet,
  startServer,
  tempDataDir,
  type CreatedKey,
  type RunningServer,
} from '../helpers/server.js';
import { anaContact } from '../helpers/one-contact.js';

const ORG = '0a0a0a0a-0000-4000-8000-000000000001';
const CONTACT = '1c1c1c1c-0000-4000-8000-000000000001';
const data = tempDataDir();
let server: RunningServer;
let key: CreatedKey;

/** The status of one GET on a fresh connection: each request is routed by the kernel anew. */
async function get(url: string, auth: string): Promise<number> {
  return (await freshGet(url, auth)).status;
}

before(async () => {
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  const b = new OrgDataBuilder(ORG);
  b.addContact(anaContact(ORG, CONTACT));
  for (let i = 0; i < 200; i++) {
    b.addMessage(
      {
        id: `m${i}`,
        organization_id: ORG,
        contact_id: CONTACT,
        conversation_id: 'c1',
        channel: 'whatsapp',
        direction: 'inbound',
        content: `Meu PEDIDO ${i} chegou`,
        sent_at: '2025-01-02T03:04:05Z',
      },
      Date.parse('2025-01-02T03:04:05Z') + i,
    );
  }
  await store.snapshots.publishSnapshot(b.build());
  await store.close();
  key = await createKey(baseEnv({ DATA_DIR: data.dir }), [ORG], 'contacts:read,messages:read');
  server = await startServer({ DATA_DIR: data.dir, SERVER_THREADS: '2', SERVING_THREAD_FAULT_HOOK: '1' });
});

after(async () => {
  const code = await server?.stop();
  data.cleanup();
  assert.equal(code, 0, 'the server stops cleanly on SIGTERM');
});

describe('SERVER_THREADS=2: a serving thread that throws', () => {
  it('is logged and replaced; the other thread keeps answering; the replacement answers', async (t) => {
    const url = `${server.url}/contacts/message-search?organization_id=${ORG}&q=pedido`;
    const auth = `Bearer ${key.key}`;
    assert.equal(await get(url, auth), 200);
    const LOOPS = 8;
    let ok = 0;
    const failures: Array<{ at: number; err: string }> = [];
    let faultAt = 0;
    let running = true;
    const loops = Array.from({ length: LOOPS }, async () => {
      while (running) {
        try {
          const status = await get(url, auth);
          assert.equal(status, 200);
          ok++;
        } catch (err) {
          failures.push({ at: Date.now(), err: (err as Error).message });
        }
      }
    });
    await new Promise((r) => setTimeout(r, 500));
    faultAt = Date.now();
    server.child.kill('SIGUSR2');
    // Replaced (the log says so), then a while more under load.
    const deadline = Date.now() + 10_000;
    while (!server.output().includes('serving thread replaced') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const replacedAt = Date.now();
    const okAtReplace = ok;
    await new Promise((r) => setTimeout(r, 1500));
    running = false;
    await Promise.all(loops);
    const out = server.output();
    assert.match(out, /serving thread: uncaught exception/);
    assert.doesNotMatch(out, /forbidden|uv_loop_close/);
    assert.match(out, /serving thread replaced/);
    const replaced = JSON.parse(out.split('\n').find((l) => l.includes('serving thread replaced'))!) as { ms: number };
    t.diagnostic(
      `ok ${ok}, failed ${failures.length} (${failures.map((f) => f.err).join(', ')}), replaced in ${replaced.ms} ms after the crash report (${replacedAt - faultAt} ms after the fault, log polled)`,
    );
    // At most the requests in flight on the dead thread: one a loop.
    assert.ok(failures.length <= LOOPS, `${failures.length} failures`);
    // After the replacement, nothing fails, and requests keep being answered.
    assert.deepEqual(
      failures.filter((f) => f.at > replacedAt),
      [],
    );
    assert.ok(ok > okAtReplace, 'answers after the replacement');
    // The replacement thread answers: its own log lines carry its name after the replacement.
    const after = out.slice(out.indexOf('serving thread replaced'));
    assert.ok(/"thread":"serving-0".*"status":200/.test(after), 'the replaced thread serves again');
    assert.ok(/"thread":"serving-1".*"status":200/.test(out), 'the other thread served throughout');
  });
});
