import { CHANNELS, DIRECTIONS, type Contact, type MessageLine, type OrgData } from './records.js';

/** A channel's and a direction's code: its index into CHANNELS and DIRECTIONS. */
export const CHANNEL_CODE = new Map<string, number>(CHANNELS.map((c, i) => [c, i]));
export const DIRECTION_CODE = new Map<string, number>(DIRECTIONS.map((d, i) => [d, i]));

/**
 * Collects one organization's contacts and already-validated messages into columns (OrgData).
 * Growable typed arrays, so a 10M-message organization never holds 10M message objects.
 */
export class OrgDataBuilder {
  readonly organizationId: string;
  private contacts: Contact[] = [];
  private contactOrdinal = new Map<string, number>();
  private n = 0;
  private ids: string[] = [];
  private conversationIds: string[] = [];
  private contents: string[] = [];
  private contactCol = new Uint32Array(1024);
  private channelCol = new Uint8Array(1024);
  private directionCol = new Uint8Array(1024);
  private sentAtCol = new Float64Array(1024);

  constructor(organizationId: string) {
    this.organizationId = organizationId;
  }

  /** Adds a contact; returns false when its id is already present. */
  addContact(c: Contact): boolean {
    if (this.contactOrdinal.has(c.id)) return false;
    this.contactOrdinal.set(c.id, this.contacts.length);
    this.contacts.push(c);
    return true;
  }

  hasContact(id: string): boolean {
    return this.contactOrdinal.has(id);
  }

  /** Contact id -> ordinal (a reader on another thread checks message lines against it). */
  contactOrdinals(): ReadonlyMap<string, number> {
    return this.contactOrdinal;
  }

  /**
   * Adds a message already validated and resolved elsewhere (a reader thread): its contact's
   * ordinal, channel and direction codes (indexes into CHANNELS and DIRECTIONS), its strings.
   */
  addResolved(
    contact: number,
    channel: number,
    direction: number,
    id: string,
    conversationId: string,
    content: string,
    sentAtMs: number,
  ): void {
    if (this.n === this.contactCol.length) this.grow();
    const i = this.n++;
    this.ids.push(id);
    this.conversationIds.push(conversationId);
    this.contents.push(content);
    this.contactCol[i] = contact;
    this.channelCol[i] = channel;
    this.directionCol[i] = direction;
    this.sentAtCol[i] = sentAtMs;
  }

  get messageCount(): number {
    return this.n;
  }

  /**
   * Adds a message whose contact was added before; `sentAtMs` is its parsed `sent_at`, `contact`
   * its contact's ordinal when the caller already looked it up (contactOrdinals()).
   */
  addMessage(m: MessageLine, sentAtMs: number, contact = this.contactOrdinal.get(m.contact_id)): void {
    if (contact === undefined) throw new Error(`org-data: message ${m.id} names unknown contact ${m.contact_id}`);
    this.addResolved(
      contact,
      CHANNEL_CODE.get(m.channel)!,
      DIRECTION_CODE.get(m.direction)!,
      m.id,
      m.conversation_id,
      m.content,
      sentAtMs,
    );
  }

  private grow(): void {
    const size = this.contactCol.length * 2;
    const c = new Uint32Array(size);
    c.set(this.contactCol);
    this.contactCol = c;
    const ch = new Uint8Array(size);
    ch.set(this.channelCol);
    this.channelCol = ch;
    const d = new Uint8Array(size);
    d.set(this.directionCol);
    this.directionCol = d;
    const s = new Float64Array(size);
    s.set(this.sentAtCol);
    this.sentAtCol = s;
  }

  build(): OrgData {
    const n = this.n;
    return {
      organizationId: this.organizationId,
      contacts: this.contacts,
      messages: {
        count: n,
        id: this.ids,
        contact: this.contactCol.slice(0, n),
        conversationId: this.conversationIds,
        channel: this.channelCol.slice(0, n),
        direction: this.directionCol.slice(0, n),
        content: this.contents,
        sentAt: this.sentAtCol.slice(0, n),
      },
    };
  }
}
