import type { Channel, Contact } from '../model/records.js';

/**
 * The immutable index of one organization. Messages are renumbered in answer order (sent_at
 * descending, ties by id ascending), so a posting list read front to back yields messages in
 * exactly the order `messages[]` needs, and a date range is one contiguous ordinal range.
 */
export interface OrgIndex {
  readonly organizationId: string;
  readonly messageCount: number;
  readonly contactCount: number;

  // ---- contacts (ordinal = position in the imported contacts) ----
  /** rendered contact objects (full form, key order of the spec), shared by every response */
  readonly contacts: readonly Contact[];
  /** rank of each contact ordinal in contact-id order, for the `data` tie-break */
  readonly contactIdRank: Uint32Array;

  // ---- per-message columns, indexed by message ordinal ----
  readonly msgContact: Uint32Array;
  /** conversation ordinal, interned per (contact, conversation_id) so it belongs to one contact */
  readonly msgConversation: Uint32Array;
  readonly msgChannel: Uint8Array;
  readonly msgDirection: Uint8Array;
  /** epoch ms, non-increasing with the ordinal */
  readonly msgSentAt: Float64Array;
  readonly msgId: readonly string[];
  readonly msgContent: readonly string[];
  readonly conversationIds: readonly string[];

  // ---- text ----
  /** token text -> token id */
  readonly tokenIds: ReadonlyMap<string, number>;
  /** postings of token t: postings[postingStart[t] .. postingStart[t+1]), ascending message ordinals */
  readonly postingStart: Uint32Array;
  readonly postings: Uint32Array;
  /** token-id sequence of message m: tokenSeq[seqStart[m] .. seqStart[m+1]), for phrase adjacency */
  readonly seqStart: Uint32Array;
  readonly tokenSeq: Uint32Array;

  /** channel code -> channel name */
  readonly channelNames: readonly Channel[];
}
