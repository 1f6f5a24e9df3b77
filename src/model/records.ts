/** The record shapes of CONTRACT 9 and the columnar form every snapshot and index is built from. */
import type { TokenInterner } from '../text/token-interner.js';

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
 * The token ids of every message's content, interned while the messages were read (the import
 * does it on its reading threads, beside the parsing): message i's ids are
 * seq[seqStart[i] .. seqStart[i + 1]), numbered by `interner`. The build renumbers tokens by
 * first occurrence in answer order, so the numbering here does not change the index.
 */
export interface ContentTokens {
  interner: TokenInterner;
  /** count + 1 starts */
  seqStart: Uint32Array;
  seq: Uint32Array;
}

/** Everything one organization's snapshot holds. */
export interface OrgData {
  organizationId: string;
  contacts: Contact[];
  messages: MessageColumns;
  /** present when the messages' tokens were interned as they were read; buildIndex does it otherwise */
  tokens?: ContentTokens;
}
