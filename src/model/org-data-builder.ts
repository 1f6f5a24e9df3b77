import { ColumnFull, jsonEscaped, StringColumnBuilder } from '../index/string-column.js';
import { internTokens } from '../text/analyze.js';
import { TokenInterner } from '../text/token-interner.js';
import { ConversationTable } from './conversation-table.js';
import { Growable, grown } from './growable.js';
import { IdColumn } from './id-column.js';
import { CHANNELS, DIRECTIONS, type Contact, type MessageLine, type OrgData } from './records.js';

/** A channel's and a direction's code: its index into CHANNELS and DIRECTIONS. */
/** Rows a builder's message columns start with. */
const INITIAL_ROWS = 256;

export const CHANNEL_CODE = new Map<string, number>(CHANNELS.map((c, i) => [c, i]));
export const DIRECTION_CODE = new Map<string, number>(DIRECTIONS.map((d, i) => [d, i]));

export interface OrgDataBuilderOptions {
  /**
   * What the import does: intern each message's content tokens, escape and encode its content and
   * resolve its conversation as it is added (OrgData.prepared), keeping no string of a message:
   * messages.id, messages.content and messages.conversationId are empty, the ids are in
   * prepared.ids. So this work runs on the reading threads beside the parsing, not after it in the
   * build, and the heap never holds the texts.
   */
  prepareText?: boolean;
}

/**
 * A batch of messages another thread read and prepared (the import's reader thread): message k's
 * token ids are tokens[tokenEnds[k - 1] .. tokenEnds[k]) (from 0 for k = 0) in that thread's
 * numbering, its escaped content content[contentOffsets[k] .. contentOffsets[k + 1]), its
 * conversation conversation[k] in that thread's numbering.
 */
export interface PreparedBatch {
  tokens: Uint32Array;
  tokenEnds: Uint32Array;
  content: Buffer;
  contentOffsets: Uint32Array;
  conversation: Uint32Array;
}

/** OrgData.prepared as it grows. */
interface PreparedColumns {
  interner: TokenInterner;
  seq: Growable;
  /** per message, where its ids start in seq */
  seqStart: Uint32Array;
  content: StringColumnBuilder;
  /** per message, its conversation in `conversations` */
  conversation: Uint32Array;
  conversations: ConversationTable;
}

/**
 * Collects one organization's contacts and already-validated messages into columns (OrgData).
 * Growable typed arrays, so a 10M-message organization never holds 10M message objects.
 */
export class OrgDataBuilder {
  readonly organizationId: string;
  private contacts: Contact[] = [];
  private contactOrdinal = new Map<string, number>();
  private n = 0;
  private readonly ids = new IdColumn();
  /** (only without prepareText) */
  private conversationIds: string[] = [];
  private contents: string[] = [];
  // Small to start with, doubled as needed: an import holds a builder an organization, and 10,000
  // small organizations at the old sizes (64-256 KB for the text columns) took 5.9 GB.
  private contactCol = new Uint32Array(INITIAL_ROWS);
  private channelCol = new Uint8Array(INITIAL_ROWS);
  private directionCol = new Uint8Array(INITIAL_ROWS);
  private sentAtCol = new Float64Array(INITIAL_ROWS);

  private prepared: PreparedColumns | null;

  constructor(organizationId: string, options: OrgDataBuilderOptions = {}) {
    this.organizationId = organizationId;
    this.prepared =
      options.prepareText === true
        ? {
            interner: new TokenInterner(),
            seq: new Growable(1 << 10),
            seqStart: new Uint32Array(INITIAL_ROWS),
            content: new StringColumnBuilder(),
            conversation: new Uint32Array(INITIAL_ROWS),
            conversations: new ConversationTable(),
          }
        : null;
  }

  /** Adds a contact; returns false when its id is already present. */
  addContact(c: Contact): boolean {
    if (this.contactOrdinal.has(c.id)) return false;
    this.contactOrdinal.set(c.id, this.contacts.length);
    this.contacts.push(c);
    return true;
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
    const t = this.prepared;
    if (t === null) {
      this.put(contact, channel, direction, id, 0, id.length, sentAtMs, conversationId, content);
      return;
    }
    const i = this.put(contact, channel, direction, id, 0, id.length, sentAtMs);
    t.conversation[i] = t.conversations.idOf(contact, conversationId);
    t.seqStart[i] = t.seq.length;
    internTokens(content, t.interner, t.seq);
    try {
      t.content.push(jsonEscaped(content));
    } catch (err) {
      throw this.named(err);
    }
  }

  /** `err` naming this organization when it is a column past its 4 GiB (ColumnFull); else `err`. */
  private named(err: unknown): unknown {
    if (!(err instanceof ColumnFull)) return err;
    return new Error(
      `import: organization ${this.organizationId}: more than 4 GiB (2^32 - 1 bytes) of message text (or of conversation ids) as JSON, the most one organization's index holds; nothing was published`,
    );
  }

  /**
   * addResolved for message k of a batch another thread prepared: its id is ids[idFrom, idTo)
   * (the batch's ids come as one string), `tokenRemap` takes its token ids to this builder's
   * (internToken of each of that thread's tokens, in its order), and `conversationRemap` its
   * conversations (internConversation of each); its content comes with addPreparedContents. Only
   * for a builder made with `prepareText`.
   */
  addPrepared(
    contact: number,
    channel: number,
    direction: number,
    ids: string,
    idFrom: number,
    idTo: number,
    sentAtMs: number,
    batch: PreparedBatch,
    k: number,
    tokenRemap: Uint32Array,
    conversationRemap: Uint32Array,
  ): void {
    const t = this.preparedColumns();
    const i = this.put(contact, channel, direction, ids, idFrom, idTo, sentAtMs);
    t.conversation[i] = conversationRemap[batch.conversation[k]];
    const seq = t.seq;
    t.seqStart[i] = seq.length;
    const from = k === 0 ? 0 : batch.tokenEnds[k - 1],
      to = batch.tokenEnds[k];
    const buf = seq.room(to - from);
    const tokens = batch.tokens;
    let at = seq.length;
    for (let q = from; q < to; q++) buf[at++] = tokenRemap[tokens[q]];
    seq.length = at;
  }

  /**
   * The escaped contents of messages from .. to - 1 of a prepared batch, in one copy: each of those
   * messages is added with addPrepared, in the same order, and its content is this (this call may
   * come before or after theirs).
   */
  addPreparedContents(batch: PreparedBatch, from: number, to: number): void {
    try {
      this.preparedColumns().content.pushRun(batch.content, batch.contentOffsets, from, to);
    } catch (err) {
      throw this.named(err);
    }
  }

  /** This builder's id of a token another thread interned (see addPrepared). */
  internToken(token: string): number {
    return this.preparedColumns().interner.idOfString(token);
  }

  /** This builder's number of a conversation another thread resolved (see addPrepared). */
  internConversation(contact: number, id: string): number {
    return this.preparedColumns().conversations.idOf(contact, id);
  }

  private preparedColumns(): PreparedColumns {
    if (this.prepared === null)
      throw new Error('org-data: a builder made without `prepareText` takes no prepared text');
    return this.prepared;
  }

  /**
   * Adds a message's columns, its id being id[idFrom, idTo); its strings only when the builder
   * does not prepare them (prepareText).
   */
  private put(
    contact: number,
    channel: number,
    direction: number,
    id: string,
    idFrom: number,
    idTo: number,
    sentAtMs: number,
    conversationId = '',
    content = '',
  ): number {
    if (this.n === this.contactCol.length) this.grow();
    const i = this.n++;
    this.ids.push(id, idFrom, idTo);
    if (this.prepared === null) {
      try {
        this.conversationIds.push(conversationId);
        this.contents.push(content);
      } catch (err) {
        throw this.named(err);
      }
    }
    this.contactCol[i] = contact;
    this.channelCol[i] = channel;
    this.directionCol[i] = direction;
    this.sentAtCol[i] = sentAtMs;
    return i;
  }

  /** The ids of the messages added so far, message i's at index i (the import's IdSet reads them). */
  messageIds(): IdColumn {
    return this.ids;
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

  /**
   * Room for about `fraction` times the messages, text and tokens it holds now, made at once: the
   * import's main thread calls it before taking the reader thread's part (that part's share of
   * the file over its own), so each column grows once, not by doubling (each doubling a copy of
   * all before it: 3.8 s of a 10M import). Capacity not written stays out of the RSS.
   */
  reserve(fraction: number): void {
    if (!(fraction > 0)) return;
    const more = (x: number) => Math.ceil(x * fraction);
    const messages = more(this.n);
    const size = this.n + messages;
    if (size > this.contactCol.length) this.grow(size);
    this.ids.reserve(messages, more(this.ids.unitCount));
    const t = this.prepared;
    if (t !== null) {
      t.content.reserve(more(t.content.byteLength), messages);
      t.seq.reserve(more(t.seq.length));
    }
  }

  private grow(atLeast = 0): void {
    const size = Math.max(this.contactCol.length * 2, atLeast);
    this.contactCol = grown(this.contactCol, size, this.n);
    this.channelCol = grown(this.channelCol, size, this.n);
    this.directionCol = grown(this.directionCol, size, this.n);
    this.sentAtCol = grown(this.sentAtCol, size, this.n);
    const t = this.prepared;
    if (t !== null) {
      t.seqStart = grown(t.seqStart, size, this.n);
      t.conversation = grown(t.conversation, size, this.n);
    }
  }

  build(): OrgData {
    const n = this.n;
    const data: OrgData = {
      organizationId: this.organizationId,
      contacts: this.contacts,
      messages: {
        count: n,
        // prepared: the ids stay code units (prepared.ids), no string a message
        id: this.prepared === null ? Array.from({ length: n }, (_, i) => this.ids.at(i)) : [],
        contact: this.contactCol.slice(0, n),
        conversationId: this.conversationIds,
        channel: this.channelCol.slice(0, n),
        direction: this.directionCol.slice(0, n),
        content: this.contents,
        sentAt: this.sentAtCol.slice(0, n),
      },
    };
    const t = this.prepared;
    if (t !== null) {
      const seqStart = new Uint32Array(n + 1);
      seqStart.set(t.seqStart.subarray(0, n));
      seqStart[n] = t.seq.length;
      data.prepared = {
        interner: t.interner,
        seqStart,
        seq: t.seq.buf.subarray(0, t.seq.length),
        content: t.content.view(),
        conversation: t.conversation.slice(0, n),
        conversations: t.conversations,
        ids: this.ids,
      };
    }
    return data;
  }
}
