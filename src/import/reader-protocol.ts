/** Messages between the import's main thread and its reader thread (read-worker.ts). */
import type { ContactDirectory } from './message-owner.js';

/** What a reader thread is started with. */
export interface ReaderData {
  file: string;
  /** the byte its range starts at, just after a line feed; it reads to the end of the file */
  start: number;
  /** base names, as errors name them */
  messagesName: string;
  contactsName: string;
  directory: ContactDirectory;
}

export type ReaderMessage =
  | {
      kind: 'batch';
      count: number;
      /** per message: organization index (ContactDirectory.orgIds), contact ordinal, codes */
      org: Uint32Array;
      contact: Uint32Array;
      channel: Uint8Array;
      direction: Uint8Array;
      sentAt: Float64Array;
      /** line numbers within the range (1-based) */
      line: Uint32Array;
      /** every message's id joined, and where each ends (UTF-16 units) */
      ids: string;
      idEnds: Uint32Array;
      /**
       * the text the build needs, prepared here (OrgDataBuilder.addPrepared): every message's
       * content JSON-escaped and UTF-8, with count + 1 offsets; every message's content token ids
       * joined, and where each message's end, numbered by the reader's interner of the message's
       * organization (its tokens new in this batch follow)
       */
      content: Uint8Array;
      contentOffsets: Uint32Array;
      tokens: Uint32Array;
      tokenEnds: Uint32Array;
      /** per message, its conversation in the reader's numbering for its organization */
      conversation: Uint32Array;
      /** conversations first met in this batch, in the reader's order: organization, contact, id joined, ends */
      newConversationOrg: Uint32Array;
      newConversationContact: Uint32Array;
      newConversations: string;
      newConversationEnds: Uint32Array;
      /** tokens first met in this batch, in the order the reader numbered them: their organization, text joined, ends */
      newTokenOrg: Uint32Array;
      newTokens: string;
      newTokenEnds: Uint32Array;
      /** the range's bytes and lines read so far, for progress */
      bytes: number;
      lines: number;
    }
  /** the range's first bad line (after the batches of the lines before it) */
  | { kind: 'error'; line: number; field: string | null; problem: string }
  /** the range read to its end: how many lines it held, blank ones too */
  | { kind: 'done'; lines: number }
  /** anything else that went wrong in the thread */
  | { kind: 'failed'; message: string };
