/**
 * The immutable index of one organization.
 *
 * Messages are renumbered in answer order (sent_at descending, ties by id ascending), so within
 * any list ascending ordinals are newest first, and a date range is one contiguous ordinal window.
 *
 * Postings are grouped by (token, contact): the entries of token t are
 * entryStart[t] .. entryStart[t+1], sorted by contact ordinal; entry e's messages are its head
 * when inline (entryFlags HEAD_INLINE: entryHead, layout.ts), then
 * storedPostings[postStart(e) .. postStart(e+1)] (post-starts.ts), ascending ordinals. Queries
 * therefore work per matching contact, not per matching message, and a contact's newest match is
 * its first.
 */
import type { ChannelBits } from './channel-bits.js';
import type { EntrySummaries } from './entry-summaries.js';
import type { SentTimes } from './sent-times.js';
import type { PairLookup, TokenLookup } from './shared-dictionary.js';

/** The sent times (sent-times.ts: a Uint32 a message of seconds from its block's base and milliseconds) are non-increasing with the ordinal. */
export interface OrgIndex extends EntrySummaries, ChannelBits, SentTimes {
  readonly organizationId: string;
  readonly messageCount: number;
  readonly contactCount: number;

  // ---- contacts (ordinal = position in the imported contacts) ----
  /**
   * each contact's whole JSON object as responses carry it (full form, key order of the spec),
   * UTF-8: contact c is contactJsonBytes[contactJsonOffsets[c] .. contactJsonOffsets[c+1])
   */
  readonly contactJsonBytes: Uint8Array;
  readonly contactJsonOffsets: Uint32Array;
  /** rank of each contact ordinal in contact-id order (the `data` tie-break) */
  readonly contactIdRank: Uint32Array;
  /** inverse of contactIdRank */
  readonly contactByIdRank: Uint32Array;

  // ---- per-message columns, indexed by message ordinal (no contact: no query reads it; the
  // snapshot keeps it as an export section, store/flat-index.ts) ----
  /**
   * the message's conversation among its contact's (interned per (contact, conversation_id), so a
   * conversation belongs to one contact), numbered from 0 by first message in answer order: the
   * conversation's ordinal is contactConversationStart[contact] + this. A walk counts a contact's
   * conversations with a stamp of a few entries (in L1, where a stamp over every conversation of
   * the organization was scattered), and the column takes 16 bits a message when every contact
   * has at most 65,536 conversations (ConversationColumn): 2 MiB less at 1M messages.
   */
  readonly msgConversation: ConversationColumn;
  /** the ordinal of each contact's first conversation, one more than the number of contacts: conversations are numbered contact by contact */
  readonly contactConversationStart: Uint32Array;
  /** direction * CHANNEL_COUNT + channel (comboOf, layout.ts): one bit position of a filter mask */
  readonly msgCombo: Uint8Array;
  /**
   * message ids and contents, and conversation ids, as UTF-8, each string already JSON-escaped
   * (the text between the quotes of JSON.stringify): responses copy these bytes as they are, and
   * the text is kept once, in this form. A message's id and content sit side by side in its row
   * (message-rows.ts); conversation ids are a string column (string-column.ts).
   */
  readonly msgRowBytes: Uint8Array;
  /** where each row starts, one more than the number of messages, in blocks (block-starts.ts; rowStart) */
  readonly msgRowStartBase: Uint32Array;
  readonly msgRowStartDelta: Uint16Array;
  readonly msgRowStartFar: Uint32Array;
  readonly conversationIdBytes: Uint8Array;
  /** one more than the number of conversations */
  readonly conversationIdOffsets: Uint32Array;

  // ---- text ----
  /** token text -> token id (a Map when built here, the shared table when loaded: shared-dictionary.ts) */
  readonly tokenIds: TokenLookup;
  /**
   * (a * vocabulary + b) -> pseudo-token id (>= vocabulary) for adjacent tokens a b that are
   * both in at least pairMinFrequency messages; pseudo-tokens have entries like tokens.
   */
  readonly pairIds: PairLookup;
  readonly pairMinFrequency: number;
  /** entries of token or pseudo-token t: entryStart[t] .. entryStart[t+1] */
  readonly entryStart: KeyColumn;
  /** contact ordinal of each entry, 16 bits wide when every ordinal fits (see contactColumnType) */
  readonly entryContact: ContactColumn;
  /**
   * where each entry's postings start (post-starts.ts, postStart): a base per block of 8 entries,
   * the distance from it in the high bits of entryNewestIn, the far blocks' starts whole
   */
  readonly entryPostBase: Int32Array;
  readonly entryPostFar: Uint32Array;
  /**
   * low bits: bit (combo, layout.ts) set when the entry's group has such a message (COMBO_BITS);
   * high bits: where its newest outbound message is (layout.ts, newestOutbound)
   */
  readonly entryFlags: Uint16Array;
  /**
   * entries + 1 words. The rank field (low bits, layout.ts rankMask): the time rank (first ordinal
   * of equal sent_at) of the entry's newest inbound message, or noInbound | the ordinal of its
   * first message. Above it, the entry's posting start's distance from its block's (post-starts.ts).
   */
  readonly entryNewestIn: Uint32Array;
  /** each entry's messages but an inline head (see the top) */
  readonly storedPostings: Uint32Array;
  /** messages of each token and pseudo-token (its document frequency; the postings no longer give it) */
  readonly keyFrequency: KeyColumn;
  /** frequency rank of each token id (0 = commonest): what tokenSeqBytes writes */
  readonly tokenRank: KeyColumn;
  /**
   * message m's tokens, for phrase adjacency: tokenSeqBytes[seqStart(m) .. seqStart(m + 1)), one
   * varint of its rank a token (token-seq.ts); the starts in blocks (block-starts.ts)
   */
  readonly seqStartBase: Uint32Array;
  readonly seqStartDelta: Uint16Array;
  readonly seqStartFar: Uint32Array;
  readonly tokenSeqBytes: Uint8Array;
  /** the first contacts of each frequent token's answer per direction (see top-lists.ts) */
  readonly topSlot: SlotColumn;
  readonly topStart: Uint32Array;
  readonly topCount: Uint32Array;
  readonly topOffsets: ContactColumn;
  readonly topBits: Uint32Array;
}

/** A column of values below some count: 16 bits when every value fits (narrowColumnType), else 32. */
export type NarrowColumn = Uint16Array | Uint32Array;

/** The element type of a column of values below `count`: 16 bits up to 65,536, else 32. */
export function narrowColumnType(count: number): 'Uint16Array' | 'Uint32Array' {
  return count <= 0x10000 ? 'Uint16Array' : 'Uint32Array';
}

/** A zeroed column of `length` values below `count` (narrowColumnType). */
export function narrowColumn(count: number, length: number): NarrowColumn {
  return narrowColumnType(count) === 'Uint16Array' ? new Uint16Array(length) : new Uint32Array(length);
}

/**
 * A column of one value a token or pair (entryStart, keyFrequency, tokenRank, the dictionary's
 * tokenOffsets): 32 bits as built and stored, 16 in a small organization's loaded index
 * (store/narrow-sections.ts).
 */
export type KeyColumn = NarrowColumn;

/** topSlot: a key's top-list slot or -1, 32 bits as built and stored, 16 when loaded small (KeyColumn). */
export type SlotColumn = Int32Array | Int16Array;

/** Contact ordinals of the entries: 16 bits when every ordinal fits (most organizations), else 32. */
export type ContactColumn = NarrowColumn;

/**
 * The element type of entryContact for an organization of `contactCount` contacts: 16 bits save
 * 2 bytes an entry (12 MiB at 1M messages) and halve what a scan over a token's entries reads.
 * The snapshot loader holds a manifest to this rule, so a column of the wrong width is refused.
 */
export function contactColumnType(contactCount: number): 'Uint16Array' | 'Uint32Array' {
  return narrowColumnType(contactCount);
}

/** A zeroed contact column of `length` for an organization of `contactCount` contacts. */
export function contactColumn(contactCount: number, length: number): ContactColumn {
  return narrowColumn(contactCount, length);
}

/**
 * A message's conversation within its contact's: narrowColumnType of the most conversations of one
 * contact. The snapshot loader accepts either width, and checks the numbers against
 * contactConversationStart.
 */
export type ConversationColumn = NarrowColumn;

/** Messages of token t in the whole organization (its document frequency). */
export function tokenFrequency(index: OrgIndex, t: number): number {
  return index.keyFrequency[t];
}

/** Fields of OrgIndex that are typed arrays: what a worker thread transfers (not copies). */
export const TYPED_ARRAY_FIELDS = [
  'contactJsonBytes',
  'contactJsonOffsets',
  'contactIdRank',
  'contactByIdRank',
  'msgConversation',
  'contactConversationStart',
  'msgCombo',
  'msgSentBlock',
  'msgSentLow',
  'msgSentFar',
  'msgRowBytes',
  'msgRowStartBase',
  'msgRowStartDelta',
  'msgRowStartFar',
  'conversationIdBytes',
  'conversationIdOffsets',
  'entryStart',
  'entryContact',
  'entryPostBase',
  'entryPostFar',
  'entryFlags',
  'entryNewestIn',
  'storedPostings',
  'keyFrequency',
  'summaryMin',
  'summaryEntries',
  'summaryValues',
  'tokenRank',
  'seqStartBase',
  'seqStartDelta',
  'seqStartFar',
  'tokenSeqBytes',
  'topSlot',
  'topStart',
  'topCount',
  'topOffsets',
  'topBits',
  'inboundChannelBits',
  'inboundChannelStart',
] as const satisfies ReadonlyArray<keyof OrgIndex>;
