/**
 * SERVER_THREADS=2 from outside: once /readyz says 200, every serving thread answers for every
 * organization loaded at start. The start posts each organization's index to the threads without
 * waiting for their acks (thread-pool.ts); only the ready state's ack, which every thread sends
 * after applying the indexes posted before it, opens /readyz.
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

const ORGANIZATIONS = 80;
const orgOf = (i: number) => `0b0b0b0b-0000-4000-8000-${String(i).padStart(12, '0')}`;
const contactOf = (i: number) => `2c2c2c2c-0000-4000-8000-${String(i).padStart(12, '0')}`;
const data = tempDataDir();
let server: RunningServer;
let key: CreatedKey;

before(async () => {
  const store = await openStores({ redisUrl: null, dataDir: data.dir });
  for (let i = 0; i < ORGANIZATIONS; i++) {
    const org = orgOf(i);
    const b = new OrgDataBuilder(org);
    b.addContact(anaContact(org, contactOf(i)));
    for (let k = 0; k < 3; k++) {
      const sentAt = `2025-01-02T03:04:0${k}Z`;
      b.addMessage(
        {
          id: `m${i}-${k}`,
          organization_id: org,
          contact_id: contactOf(i),
          conversation_id: 'c1',
          channel: 'telegram',
          direction: 'inbound',
          content: `pedido ${i} número ${k}`,
          sent_at: sentAt,
        },
        Date.parse(sentAt),
      );
    }
    await store.snapshots.publishSnapshot(b.build());
  }
  await store.close();
  const orgs = Array.from({ length: ORGANIZATIONS }, (_, i) => orgOf(i));
  key = await createKey(baseEnv({ DATA_DIR: data.dir }), orgs, 'contacts:read,messages:read');
  server = await startServer({ DATA_DIR: data.dir, SERVER_THREADS: '2' });
});

after(async () => {
  const code = await server?.stop();
  data.cleanup();
  assert.equal(code, 0, 'the server stops cleanly on SIGTERM');
});

describe('SERVER_THREADS=2: the start', () => {
  it('once ready, every organization is answered on fresh connections (both threads)', async () => {
    const auth = `Bearer ${key.key}`;
    const wrong: string[] = [];
    // 4 fresh connections an organization, all at once: both threads take some of them
    await Promise.all(
      Array.from({ length: ORGANIZATIONS * 4 }, async (_, n) => {
        const i = n % ORGANIZATIONS;
        const r = await freshGet(`${server.url}/contacts/message-search?organization_id=${orgOf(i)}&q=pedido`, auth);
        const body =
          r.status === 200
            ? (JSON.parse(r.body) as { data: { contact: { id: string }; match_count: number }[] })
            : null;
        if (
          body === null ||
          body.data.length !== 1 ||
          body.data[0].contact.id !== contactOf(i) ||
          body.data[0].match_count !== 3
        )
          wrong.push(`${orgOf(i)}: ${r.status} ${r.body.slice(0, 200)}`);
      }),
    );
    assert.deepEqual(wrong, []);
    // both threads answered (each access log line names its thread)
    const out = server.output();
    assert.ok(/"thread":"serving-0"/.test(out) && /"thread":"serving-1"/.test(out), 'both threads served');
  });
});
