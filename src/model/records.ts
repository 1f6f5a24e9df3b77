/** The record shapes of CONTRACT 9 and the columnar form every snapshot and index is built from. */
import type { TokenInterner } from '../text/token-interner.js';
import type { ConversationTable } from './conversation-table.js';
import type { IdColumn } from './id-column.js';

export const CHANNELS = ['whatsapp', 'whatsapp_cloud_api', 'instagram', 'telegram', 'email'] as const;
export type Channel = (typeof CHANNELS)[number];
export const DIRECTIONS = ['inbound', 'outbound'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/** A contact as imported (CONTRACT 9) and as rendered in responses (spec 2.1, full form). */
export interface Contact {
  id: string;
  organization_id: string;
  name: string | null;
  phone: string | null;
  email: string | null;
  avatar_url: string | null;
  source: string | null;
}

/** A message line as imported (CONTRACT 9); `sent_at` is the raw RFC 3339 text. */
export interface MessageLine {
  id: string;
  organization_id: string;
  contact_id: string;
  conversation_id: string;
  channel: Channel;
  direction: Direction;
  content: string;
  sent_at: string;
}

/**
 * One organization's messages as parallel columns: message i is (id[i], contact[i], ...).
 * Keeping columns instead of 10M objects keeps snapshots and the index compact.
 */
export interface MessageColumns {
  count: number;
  id: string[];
  /** ordinal into OrgData.contacts */
  contact: Uint32Array;
  conversationId: string[];
  /** index into CHANNELS */
  channel: Uint8Array;
  /** index into DIRECTIONS: 0 inbound, 1 outbound */
  direction: Uint8Array;
  content: string[];
  /** epoch milliseconds */
  sentAt: Float64Array;
}

/**
 * The text work of the build done while the messages were read (the import does it on its
 * reading threads, beside the parsing):
 * - the token ids of every message's content: message i's are seq[seqStart[i] .. seqStart[i + 1]),
 *   numbered by `interner` (the build renumbers tokens by first occurrence in answer order, so
 *   this numbering does not change the index);
 * - every message's content, JSON-escaped and UTF-8 (jsonEscaped): message i's is
 *   content.bytes[content.offsets[i] .. content.offsets[i + 1]);
 * - every message's conversation, numbered by `conversations` (renumbered by the build too);
 * - every message's id, as code units (`ids`).
 * messages.id, messages.content and messages.conversationId are then empty: no string a message.
 */
export interface PreparedText {
  interner: TokenInterner;
  /** count + 1 starts */
  seqStart: Uint32Array;
  seq: Uint32Array;
  content: { bytes: Buffer; offsets: Uint32Array };
  conversation: Uint32Array;
  conversations: ConversationTable;
  /** every message's id (messages.id is then empty) */
  ids: IdColumn;
}

/** Everything one organization's snapshot holds. */
export interface OrgData {
  organizationId: string;
  contacts: Contact[];
  messages: MessageColumns;
  /** present when the messages' text was prepared as they were read (the import); buildIndex does it otherwise */
  prepared?: PreparedText;
}
