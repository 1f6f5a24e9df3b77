import { CHANNELS, type Contact, type OrgData } from '../model/records.js';
import { normalize, TOKEN } from '../text/normalize.js';
import type { OrgIndex } from './org-index.js';

export type { OrgIndex } from './org-index.js';

/** Orders message indexes by sent_at descending, ties by id ascending (JS `<`), CONTRACT 3. */
function answerOrder(data: OrgData): Uint32Array {
  const { count, sentAt, id } = data.messages;
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => {
    const d = sentAt[b] - sentAt[a];
    if (d !== 0) return d;
    const ia = id[a], ib = id[b];
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  });
  return order;
}

/** Contacts re-created in the spec's key order, so JSON output never depends on the import's order. */
function renderContact(c: Contact): Contact {
  return {
    id: c.id,
    organization_id: c.organization_id,
    name: c.name,
    phone: c.phone,
    email: c.email,
    avatar_url: c.avatar_url,
    source: c.source,
  };
}

class Growable {
  buf: Uint32Array;
  length = 0;
  constructor(capacity: number) {
    this.buf = new Uint32Array(Math.max(16, capacity));
  }
  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Uint32Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }
  toArray(): Uint32Array {
    return this.buf.slice(0, this.length);
  }
}

/** Builds the immutable index of one organization from its snapshot columns. */
export function buildIndex(data: OrgData): OrgIndex {
  const m = data.messages;
  const n = m.count;
  const order = answerOrder(data);

  const contacts = data.contacts.map(renderContact);
  const byId = contacts.map((_, i) => i).sort((a, b) => (contacts[a].id < contacts[b].id ? -1 : 1));
  const contactIdRank = new Uint32Array(contacts.length);
  byId.forEach((ord, rank) => (contactIdRank[ord] = rank));

  const msgContact = new Uint32Array(n);
  const msgConversation = new Uint32Array(n);
  const msgChannel = new Uint8Array(n);
  const msgDirection = new Uint8Array(n);
  const msgSentAt = new Float64Array(n);
  const msgId: string[] = new Array(n);
  const msgContent: string[] = new Array(n);
  const conversationOrdinal = new Map<string, number>();
  const conversationIds: string[] = [];

  const tokenIds = new Map<string, number>();
  const seqStart = new Uint32Array(n + 1);
  const tokenSeq = new Growable(n * 8);
  // document frequency per token, counted once per message via lastSeen
  const df = new Growable(1024);
  const lastSeen = new Growable(1024);

  for (let o = 0; o < n; o++) {
    const i = order[o];
    const contact = m.contact[i];
    msgContact[o] = contact;
    msgChannel[o] = m.channel[i];
    msgDirection[o] = m.direction[i];
    msgSentAt[o] = m.sentAt[i];
    msgId[o] = m.id[i];
    msgContent[o] = m.content[i];
    const convKey = contact + ':' + m.conversationId[i];
    let conv = conversationOrdinal.get(convKey);
    if (conv === undefined) {
      conv = conversationIds.length;
      conversationOrdinal.set(convKey, conv);
      conversationIds.push(m.conversationId[i]);
    }
    msgConversation[o] = conv;

    seqStart[o] = tokenSeq.length;
    const tokens = normalize(m.content[i]).match(TOKEN);
    if (tokens !== null) {
      for (const t of tokens) {
        let id = tokenIds.get(t);
        if (id === undefined) {
          id = tokenIds.size;
          tokenIds.set(t, id);
          df.push(0);
          lastSeen.push(0xffffffff);
        }
        tokenSeq.push(id);
        if (lastSeen.buf[id] !== o) {
          lastSeen.buf[id] = o;
          df.buf[id]++;
        }
      }
    }
  }
  seqStart[n] = tokenSeq.length;
  const seq = tokenSeq.toArray();

  // Postings in CSR form, filled in ordinal order so each list comes out ascending.
  const vocabulary = tokenIds.size;
  const postingStart = new Uint32Array(vocabulary + 1);
  for (let t = 0; t < vocabulary; t++) postingStart[t + 1] = postingStart[t] + df.buf[t];
  const postings = new Uint32Array(postingStart[vocabulary]);
  const fill = postingStart.slice(0, vocabulary);
  lastSeen.buf.fill(0xffffffff);
  for (let o = 0; o < n; o++) {
    for (let k = seqStart[o], end = seqStart[o + 1]; k < end; k++) {
      const t = seq[k];
      if (lastSeen.buf[t] !== o) {
        lastSeen.buf[t] = o;
        postings[fill[t]++] = o;
      }
    }
  }

  return {
    organizationId: data.organizationId,
    messageCount: n,
    contactCount: contacts.length,
    contacts,
    contactIdRank,
    msgContact,
    msgConversation,
    msgChannel,
    msgDirection,
    msgSentAt,
    msgId,
    msgContent,
    conversationIds,
    tokenIds,
    postingStart,
    postings,
    seqStart,
    tokenSeq: seq,
    channelNames: CHANNELS,
  };
}
