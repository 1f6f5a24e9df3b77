/**
 * The smallest organization a test can search: one contact (Ana, whatsapp) and a message a
 * content given (ids m1, m2, ...), one second apart from 2025-01-02T03:04:05Z, all inbound on
 * whatsapp in conversation c1.
 */
import { OrgDataBuilder } from '../../src/model/org-data-builder.js';
import type { Contact, MessageLine, OrgData } from '../../src/model/records.js';
import { parseRfc3339 } from '../../src/time/rfc3339.js';
import { openStores } from '../../src/store/open-store.js';

/** Ana, a whatsapp contact with a phone and nothing else. */
export function anaContact(org: string, contactId: string): Contact {
  return {
    id: contactId,
    organization_id: org,
    name: 'Ana',
    phone: '+5511999990000',
    email: null,
    avatar_url: null,
    source: 'whatsapp',
  };
}

/** A contact with an id, maybe a name, and nothing else: what generated test organizations hold. */
export function bareContact(org: string, id: string, name: string | null = null): Contact {
  return { id, organization_id: org, name, phone: null, email: null, avatar_url: null, source: null };
}

/** The OrgData of an organization's import lines, as the importer builds it (no files). */
export function dataOfLines(org: string, contacts: readonly Contact[], messages: readonly MessageLine[]): OrgData {
  const b = new OrgDataBuilder(org);
  for (const c of contacts) b.addContact(c);
  for (const m of messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return b.build();
}

export function oneContactData(org: string, contactId: string, contents: string[] = []): OrgData {
  const b = new OrgDataBuilder(org);
  b.addContact(anaContact(org, contactId));
  const t0 = Date.parse('2025-01-02T03:04:05Z');
  for (const [i, content] of contents.entries()) {
    b.addMessage(
      {
        id: `m${i + 1}`,
        organization_id: org,
        contact_id: contactId,
        conversation_id: 'c1',
        channel: 'whatsapp',
        direction: 'inbound',
        content,
        sent_at: new Date(t0 + i * 1000).toISOString(),
      },
      t0 + i * 1000,
    );
  }
  return b.build();
}

/** Publishes `oneContactData` into the embedded store at `dataDir`. */
export async function publishOneContact(dataDir: string, org: string, contactId: string, contents: string[] = []) {
  const store = await openStores({ redisUrl: null, dataDir });
  try {
    return await store.snapshots.publishSnapshot(oneContactData(org, contactId, contents));
  } finally {
    await store.close();
  }
}
