/**
 * A reader thread of the import: parses and validates its byte range of the messages file (the
 * second part of a large one, importer.ts) with the main thread's own functions, and hands each
 * read block's messages over as typed columns and one joined string a field (a structured clone
 * of one string is a copy, not a parse). It also does the build's text work for its messages as
 * it reads them: tokens interned, content escaped and encoded, conversations resolved
 * (OrgDataBuilder.addPrepared). It stops at its first bad line and reports it; duplicate
 * ids are the main thread's to find, in line order over both parts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Growable } from '../model/growable.js';
import { CHANNEL_CODE, DIRECTION_CODE } from '../model/org-data-builder.js';
import { jsonEscaped, StringColumnBuilder } from '../index/string-column.js';
import { ConversationTable } from '../model/conversation-table.js';
import { internTokens } from '../text/analyze.js';
import { TokenInterner } from '../text/token-interner.js';
import { parseRfc3339 } from '../time/rfc3339.js';
import { ImportError, lineErrorOf } from './import-error.js';
import { readLines } from './line-reader.js';
import { type ContactDirectory, OwnerResolver } from './message-owner.js';
import { parseLine } from './parse-line.js';
import type { ReaderData, ReaderMessage } from './reader-protocol.js';
import { MessageLineSchema } from './schemas.js';

const port = parentPort!;
const data = workerData as ReaderData;
const dir: ContactDirectory = data.directory;
const owner = new OwnerResolver(dir, data.messagesName, data.contactsName);
/**
 * Per organization: this thread's token interner, and how many of its tokens earlier batches
 * announced. Tokenizing here, beside the parsing, takes it off the main thread's build.
 */
const interners: (TokenInterner | undefined)[] = [];
const announced: number[] = [];
/** Per organization: this thread's conversations (numbered here; the main thread renumbers). */
const conversations: (ConversationTable | undefined)[] = [];

/** One block's messages, column by column. */
class Block {
  n = 0;
  org: number[] = [];
  contact: number[] = [];
  channel: number[] = [];
  direction: number[] = [];
  sentAt: number[] = [];
  line: number[] = [];
  ids: string[] = [];
  conversation: number[] = [];
  newConversationOrg: number[] = [];
  newConversationContact: number[] = [];
  newConversations: string[] = [];
  content = new StringColumnBuilder();
  tokens = new Growable(1 << 12);
  tokenEnds: number[] = [];

  /**
   * A message's content escaped and encoded, its tokens interned and its conversation resolved
   * (in its organization's interner and conversations); a new conversation is announced.
   */
  prepare(org: number, contact: number, conversationId: string, content: string): void {
    const table = (conversations[org] ??= new ConversationTable());
    const known = table.size;
    const conv = table.idOf(contact, conversationId);
    this.conversation.push(conv);
    if (conv === known) {
      this.newConversationOrg.push(org);
      this.newConversationContact.push(contact);
      this.newConversations.push(conversationId);
    }
    const interner = (interners[org] ??= new TokenInterner());
    internTokens(content, interner, this.tokens);
    this.tokenEnds.push(this.tokens.length);
    this.content.push(jsonEscaped(content));
  }

  post(bytes: number, lines: number): void {
    // the tokens first met in this batch, organization by organization, in their id order
    const newTokenOrg: number[] = [];
    const newTokens: string[] = [];
    for (let org = 0; org < interners.length; org++) {
      const interner = interners[org];
      if (interner === undefined) continue;
      for (let id = announced[org] ?? 0; id < interner.size; id++) {
        newTokenOrg.push(org);
        newTokens.push(interner.token(id));
      }
      announced[org] = interner.size;
    }
    const ends = (xs: string[]): Uint32Array => {
      const out = new Uint32Array(xs.length);
      let at = 0;
      for (let k = 0; k < xs.length; k++) out[k] = at += xs[k].length;
      return out;
    };
    const text = this.content.build();
    const msg: ReaderMessage = {
      kind: 'batch',
      count: this.n,
      org: Uint32Array.from(this.org),
      contact: Uint32Array.from(this.contact),
      channel: Uint8Array.from(this.channel),
      direction: Uint8Array.from(this.direction),
      sentAt: Float64Array.from(this.sentAt),
      line: Uint32Array.from(this.line),
      ids: this.ids.join(''),
      idEnds: ends(this.ids),
      content: text.bytes,
      contentOffsets: text.offsets,
      tokens: this.tokens.toArray(),
      tokenEnds: Uint32Array.from(this.tokenEnds),
      conversation: Uint32Array.from(this.conversation),
      newConversationOrg: Uint32Array.from(this.newConversationOrg),
      newConversationContact: Uint32Array.from(this.newConversationContact),
      newConversations: this.newConversations.join(''),
      newConversationEnds: ends(this.newConversations),
      newTokenOrg: Uint32Array.from(newTokenOrg),
      newTokens: newTokens.join(''),
      newTokenEnds: ends(newTokens),
      bytes,
      lines,
    };
    const columns = [msg.org, msg.contact, msg.channel, msg.direction, msg.sentAt, msg.line];
    port.postMessage(
      msg,
      [
        ...columns,
        msg.idEnds,
        msg.content,
        msg.contentOffsets,
        msg.tokens,
        msg.tokenEnds,
        msg.newTokenOrg,
        msg.newTokenEnds,
        msg.conversation,
        msg.newConversationOrg,
        msg.newConversationContact,
        msg.newConversationEnds,
      ].map((a) => a.buffer as ArrayBuffer),
    );
  }
}

async function read(): Promise<void> {
  let bytes = 0,
    lines = 0,
    total = 0;
  const range = { start: data.start, onLines: (n: number) => (total = n) };
  let block = new Block();
  try {
    for await (const batch of readLines(data.file, (n) => (bytes += n), range)) {
      for (const l of batch) {
        const m = parseLine(MessageLineSchema, l, data.messagesName, l.number);
        owner.resolve(m, l.number);
        block.org.push(owner.org);
        block.contact.push(owner.contact);
        block.channel.push(CHANNEL_CODE.get(m.channel)!);
        block.direction.push(DIRECTION_CODE.get(m.direction)!);
        block.sentAt.push(parseRfc3339(m.sent_at)!);
        block.line.push(l.number);
        block.ids.push(m.id);
        block.prepare(owner.org, owner.contact, m.conversation_id, m.content);
        block.n++;
        lines++;
      }
      block.post(bytes, lines);
      block = new Block();
    }
    port.postMessage({ kind: 'done', lines: total } satisfies ReaderMessage);
  } catch (thrown) {
    // a line too long is a bad line like any other (its number within this range)
    const err = lineErrorOf(thrown, data.messagesName);
    if (!(err instanceof ImportError)) throw err;
    if (block.n > 0) block.post(bytes, lines);
    port.postMessage({ kind: 'error', line: err.line, field: err.field, problem: err.problem } satisfies ReaderMessage);
  }
}

read().catch((err: unknown) => {
  port.postMessage({ kind: 'failed', message: (err as Error)?.stack ?? String(err) } satisfies ReaderMessage);
});
