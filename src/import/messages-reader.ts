/**
 * Reads and validates the messages file into the organizations' builders. A large file is read on
 * two threads: this one takes its first part (MAIN_SHARE), a reader thread (read-worker.ts) parses
 * and validates the rest at the same time, and this thread then takes the reader's messages
 * in line order, checking their ids for duplicates over both parts. The first error in line
 * order is the one reported, with its line number in the whole file, as when one thread reads.
 */
import type { Worker } from 'node:worker_threads';
import { open, stat } from 'node:fs/promises';
import { Growable } from '../model/growable.js';
import type { OrgDataBuilder, PreparedBatch } from '../model/org-data-builder.js';
import type { MessageLine } from '../model/records.js';
import { startModuleWorker } from '../runtime/module-worker.js';
import { parseRfc3339 } from '../time/rfc3339.js';
import type { IdSet } from './id-set.js';
import { ImportError, lineErrorOf, show } from './import-error.js';
import { type LineRange, readLines } from './line-reader.js';
import { type ContactDirectory, OwnerResolver } from './message-owner.js';
import { parseLine } from './parse-line.js';
import type { Progress } from './progress.js';
import type { ReaderData, ReaderMessage } from './reader-protocol.js';
import { MessageLineSchema } from './schemas.js';

const NO_TOKENS = new Uint32Array(0);

/** From this size on a messages file is read on two threads (a thread's start costs ~0.1 s). */
export const SPLIT_MIN_BYTES = 64 << 20;

export interface MessageSink {
  builder: OrgDataBuilder;
  messageIds: IdSet;
}

export interface MessagesInput {
  file: string;
  messagesName: string;
  contactsName: string;
  directory: ContactDirectory;
  /** per organization, in the directory's order */
  sinks: MessageSink[];
}

interface Counts {
  bytes: number;
  lines: number;
  readerBytes: number;
  readerLines: number;
}

/** Reads the messages file; resolves to how many messages it held, or rejects with the first ImportError. */
export async function readMessages(
  input: MessagesInput,
  progress: Progress,
  splitMinBytes: number = SPLIT_MIN_BYTES,
): Promise<number> {
  const size = (await stat(input.file)).size;
  progress.start(input.messagesName, size);
  const counts: Counts = { bytes: 0, lines: 0, readerBytes: 0, readerLines: 0 };
  const report = () => progress.update(counts.bytes + counts.readerBytes, counts.lines + counts.readerLines);
  const split = size >= splitMinBytes ? await splitPoint(input.file, size) : size;
  const reader = split < size ? ReaderThread.start(input, split, counts, report) : null;
  const owner = new OwnerResolver(input.directory, input.messagesName, input.contactsName);
  let messages = 0;
  try {
    let firstLines = 0;
    const first: LineRange = { start: 0, end: split, onLines: (n) => (firstLines = n) };
    messages += await readRange(input, owner, first, 0, counts, report);
    if (split < size) {
      if (reader !== null && split > 0) {
        // the reader's part is the rest of the file: room for about as much again, per byte, as
        // this thread's part made, so the columns grow once (5% over, for the variation)
        const fraction = ((size - split) / split) * 1.05;
        for (const sink of input.sinks) sink.builder.reserve(fraction);
      }
      const merged = reader === null ? null : await merge(input, reader, firstLines);
      // no reader thread could start: this thread reads the rest too
      messages += merged ?? (await readRange(input, owner, { start: split }, firstLines, counts, report));
    }
  } finally {
    reader?.stop();
  }
  report();
  progress.stop();
  return messages;
}

/**
 * The share of a split file this thread reads: less than half, because it also takes the
 * reader's messages afterwards (0.5 s of a 1M import). 1M import, three rounds each: 9.49-10.0 s
 * at halves, 8.97-9.31 at 0.42, 9.14-9.41 at 0.45. Re-measured once taking them had become
 * cheaper (0.45 s, contents copied a run at a time): 0.44, 0.48 and 0.52 within the noise.
 */
const MAIN_SHARE = 0.44;

/** The first byte after the first line feed from MAIN_SHARE of the file on, or `size` when there is none. */
async function splitPoint(file: string, size: number): Promise<number> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 16);
    for (let at = Math.floor(size * MAIN_SHARE); at < size; ) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, at);
      if (bytesRead === 0) break;
      const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
      if (nl >= 0) return at + nl + 1;
      at += bytesRead;
    }
    return size;
  } finally {
    await fh.close();
  }
}

function duplicate(input: MessagesInput, line: number, id: string, org: number): ImportError {
  const orgId = input.directory.orgIds[org];
  return new ImportError(input.messagesName, line, 'id', `duplicate message id ${show(id)} in organization ${orgId}`);
}

/** Reads `range` on this thread, its line numbers shifted by `offset`. */
async function readRange(
  input: MessagesInput,
  owner: OwnerResolver,
  range: LineRange,
  offset: number,
  counts: Counts,
  report: () => void,
): Promise<number> {
  let n = 0;
  try {
    for await (const batch of readLines(input.file, (b) => (counts.bytes += b), range)) {
      counts.lines += batch.length;
      report();
      for (const l of batch) {
        const number = offset + l.number;
        const m: MessageLine = parseLine(MessageLineSchema, l, input.messagesName, number);
        owner.resolve(m, number);
        const sink = input.sinks[owner.org];
        // added first, then checked: a duplicate stops the import, so it need not be taken out
        sink.builder.addMessage(m, parseRfc3339(m.sent_at)!, owner.contact);
        if (!sink.messageIds.add(sink.builder.messageCount - 1)) throw duplicate(input, number, m.id, owner.org);
        n++;
      }
    }
  } catch (err) {
    throw lineErrorOf(err, input.messagesName, offset);
  }
  return n;
}

/**
 * Takes the reader's messages in line order; resolves to how many, or to null when the reader
 * thread never started (nothing taken from it). Its first bad line is thrown once every message
 * before it was taken, so a duplicate id before that line is reported first, as it comes first.
 */
async function merge(input: MessagesInput, reader: ReaderThread, offset: number): Promise<number | null> {
  let n = 0;
  // per organization: the reader's token ids and conversations -> its builder's
  const tokenRemap: Growable[] = [];
  const conversationRemap: Growable[] = [];
  for (;;) {
    const msg = await reader.next();
    if (msg.kind === 'done') return n;
    if (msg.kind === 'error') throw new ImportError(input.messagesName, offset + msg.line, msg.field, msg.problem);
    if (msg.kind === 'failed') {
      if (!reader.online && n === 0) return null;
      throw new Error(`import: the thread reading ${input.messagesName} failed: ${msg.message}`);
    }
    for (let t = 0, at = 0; t < msg.newTokenOrg.length; t++) {
      const org = msg.newTokenOrg[t];
      const end = msg.newTokenEnds[t];
      (tokenRemap[org] ??= new Growable(1 << 12)).push(
        input.sinks[org].builder.internToken(msg.newTokens.slice(at, end)),
      );
      at = end;
    }
    for (let c = 0, at = 0; c < msg.newConversationOrg.length; c++) {
      const org = msg.newConversationOrg[c];
      const end = msg.newConversationEnds[c];
      const builder = input.sinks[org].builder;
      const conv = builder.internConversation(msg.newConversationContact[c], msg.newConversations.slice(at, end));
      (conversationRemap[org] ??= new Growable(1 << 12)).push(conv);
      at = end;
    }
    const batch: PreparedBatch = {
      tokens: msg.tokens,
      tokenEnds: msg.tokenEnds,
      content: Buffer.from(msg.content.buffer, msg.content.byteOffset, msg.content.byteLength),
      contentOffsets: msg.contentOffsets,
      conversation: msg.conversation,
    };
    let id = 0;
    for (let k = 0; k < msg.count; ) {
      // a run of messages of one organization: their contents in one copy
      const org = msg.org[k];
      let runEnd = k + 1;
      while (runEnd < msg.count && msg.org[runEnd] === org) runEnd++;
      const sink = input.sinks[org];
      sink.builder.addPreparedContents(batch, k, runEnd);
      for (; k < runEnd; k++) {
        // the id is read from the batch's one string of ids, never sliced into a string of its own
        const idEnd = msg.idEnds[k];
        sink.builder.addPrepared(
          msg.contact[k],
          msg.channel[k],
          msg.direction[k],
          msg.ids,
          id,
          idEnd,
          msg.sentAt[k],
          batch,
          k,
          // an organization's first messages may have no tokens, before any was announced
          tokenRemap[org]?.buf ?? NO_TOKENS,
          // every message has a conversation, announced in its batch or before
          conversationRemap[org].buf,
        );
        if (!sink.messageIds.add(sink.builder.messageCount - 1))
          throw duplicate(input, offset + msg.line[k], msg.ids.slice(id, idEnd), org);
        id = idEnd;
        n++;
      }
    }
  }
}

/** The reader thread's messages as they arrive, in order. */
class ReaderThread {
  private readonly queue: (ReaderMessage | null)[] = [];
  private head = 0;
  private wake: (() => void) | null = null;
  private ended = false;
  online = false;

  private constructor(
    private readonly worker: Worker | null,
    private readonly counts: Counts,
    private readonly report: () => void,
  ) {}

  static start(input: MessagesInput, start: number, counts: Counts, report: () => void): ReaderThread {
    const data: ReaderData = {
      file: input.file,
      start,
      messagesName: input.messagesName,
      contactsName: input.contactsName,
      directory: input.directory,
    };
    let worker: Worker;
    try {
      worker = startModuleWorker(import.meta.url, 'read-worker', { workerData: data, name: 'import-reader' });
    } catch (err) {
      const reader = new ReaderThread(null, counts, report);
      reader.push({ kind: 'failed', message: (err as Error).message });
      return reader;
    }
    const reader = new ReaderThread(worker, counts, report);
    worker.once('online', () => (reader.online = true));
    worker.on('message', (msg: ReaderMessage) => reader.push(msg));
    worker.on('error', (err: Error) => reader.push({ kind: 'failed', message: err.message }));
    worker.on('exit', (code) => reader.push({ kind: 'failed', message: `it exited with code ${code}` }));
    return reader;
  }

  private push(msg: ReaderMessage): void {
    if (this.ended) return;
    if (msg.kind === 'batch') {
      this.counts.readerBytes = msg.bytes;
      this.counts.readerLines = msg.lines;
      this.report();
    } else this.ended = true;
    this.queue.push(msg);
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async next(): Promise<ReaderMessage> {
    while (this.head === this.queue.length) await new Promise<void>((resolve) => (this.wake = resolve));
    const msg = this.queue[this.head]!;
    this.queue[this.head++] = null; // taken: its strings can go once merged
    return msg;
  }

  stop(): void {
    const w = this.worker;
    if (w === null) return;
    w.removeAllListeners();
    w.on('error', () => {});
    void w.terminate();
  }
}
