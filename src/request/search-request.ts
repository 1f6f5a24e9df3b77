import type { Channel, Contact } from '../model/records.js';

/** A fully validated search (CONTRACT 2 and 4 applied): what the index and the reference both answer. */
export interface SearchRequest {
  /** lower case UUID */
  organizationId: string;
  /** final normalized terms, 1 to 10, in order */
  terms: string[];
  match: 'any' | 'all';
  direction: 'inbound' | 'outbound' | 'all';
  channel: Channel | null;
  /** epoch ms, inclusive, or null */
  from: number | null;
  /** epoch ms, inclusive, or null */
  to: number | null;
  limit: number;
  offset: number;
  messagesLimit: number;
}

/** spec 2.3, full form */
export interface ResultMessage {
  id: string;
  conversation_id: string;
  channel: Channel;
  direction: 'inbound' | 'outbound';
  content: string;
  sent_at: string;
}

/** spec 2.2 */
export interface ResultItem {
  /** full form, key order of spec 2.1 */
  contact: Contact;

  match_count: number;
  conversations_count: number;
  first_matched_at: string;
  last_matched_at: string;
  messages: ResultMessage[];
}

/** The whole 200 body (spec 4.1), field order as the spec lists them. */
export interface SearchResponse {
  data: ResultItem[];
  pagination: { limit: number; offset: number; count: number; has_more: boolean; next_offset: number | null };
  query: {
    organization_id: string;
    terms: string[];
    match: 'any' | 'all';
    direction: 'inbound' | 'outbound' | 'all';
    channel: Channel | null;
    from: string | null;
    to: string | null;
  };
}
