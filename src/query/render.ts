/**
 * The 200 body as bytes (spec 2.2-2.5, full forms, key order of the spec): constant pieces, the
 * index's pre-escaped strings copied, numbers and timestamps written in place (body-writer.ts).
 */
import { CHANNEL_COUNT, COMBO_VALUE } from '../index/layout.js';
import { contentStart, idStart, rowEnd, rowStart } from '../index/message-rows.js';
import type { OrgIndex } from '../index/org-index.js';
import { isPacked, UUID_TEXT_LENGTH } from '../index/packed-uuid.js';
import { CHANNELS } from '../model/records.js';
import type { SearchRequest } from '../request/search-request.js';
import { bodyWriter, type BodyWriter, type Piece, utf8 } from './body-writer.js';
import type { Plan } from './plan.js';
import type { Scratch, TextViews } from './scratch.js';
import { walkContact } from './walk.js';

// ---- the body's fixed pieces (spec 2.2-2.5, full forms, key order of the spec) ----
const DATA_OPEN = utf8('{"data":[');
const ITEM_OPEN = utf8('{"contact":');
const NEXT_ITEM_OPEN = utf8(',{"contact":');
const MATCH_COUNT = utf8(',"match_count":');
const CONVERSATIONS_COUNT = utf8(',"conversations_count":');
const FIRST_MATCHED = utf8(',"first_matched_at":"');
const LAST_MATCHED = utf8('","last_matched_at":"');
const MESSAGES_OPEN = utf8('","messages":[');
const ITEM_CLOSE = utf8(']}');
/** a message's close is written with what follows it: the next message's open, or the list's close */
const MESSAGE_OPEN = utf8('{"id":"');
const NEXT_MESSAGE_OPEN = utf8('"},{"id":"');
const LAST_MESSAGE_ITEM_CLOSE = utf8('"}]}');
const CONVERSATION = utf8('","conversation_id":"');
/** per combo (direction * CHANNEL_COUNT + channel): the channel and direction fields and the opening of content */
const COMBO = Array.from({ length: 2 * CHANNEL_COUNT }, (_, combo) =>
  utf8(
    `","channel":"${CHANNELS[combo % CHANNEL_COUNT]}","direction":"${combo < CHANNEL_COUNT ? 'inbound' : 'outbound'}","content":"`,
  ),
);
const SENT_AT = utf8('","sent_at":"');
const PAGINATION = utf8('],"pagination":{"limit":');
const OFFSET = utf8(',"offset":');
const COUNT = utf8(',"count":');
const HAS_MORE_TRUE = utf8(',"has_more":true,"next_offset":');
const HAS_MORE_FALSE = utf8(',"has_more":false,"next_offset":null');
/** the `query` object (spec 2.5): its fixed pieces by value, so no object, Date or stringify a request */
const QUERY_ORG = utf8('},"query":{"organization_id":"');
const QUERY_TERMS = utf8('","terms":');
const QUERY_MATCH = { any: utf8(',"match":"any","direction":"'), all: utf8(',"match":"all","direction":"') };
const QUERY_DIRECTION = {
  inbound: utf8('inbound","channel":'),
  outbound: utf8('outbound","channel":'),
  all: utf8('all","channel":'),
};
const QUERY_CHANNEL = new Map<string | null, Piece>([
  [null, utf8('null,"from":')],
  ...CHANNELS.map((c): [string, Piece] => [c, utf8(`"${c}","from":`)]),
]);
const NULL = utf8('null');
const QUOTE = utf8('"');
const QUERY_TO = utf8(',"to":');
const BODY_CLOSE = utf8('}}');
/** bound on an item's or message's bytes besides its strings (keys, numbers, timestamps) */
const ITEM_FIXED = 320;
const MESSAGE_FIXED = 200;

/**
 * Words of s.pageMessages a picked message: its id's start, its content's start (the id's end),
 * its conversation id's bounds, its row's end (the content's end), its combo and whether its
 * id is packed (1) or text (0); 8, not 7, so
 * that a message's words never straddle two cache lines.
 */
const MESSAGE_WORDS = 8;
/** Words of s.pageItems a page contact: its walk (count, conversations, newest, oldest, picked). */
const ITEM_WORDS = 5;

/**
 * Writes the items of page positions [from, to): contacts s.touched[i], and, when `withEntries`,
 * each one's entry of term s.pageTerm[i] in s.pageEntry[i] (a top-list page knows it).
 *
 * In four passes, so that the cache misses of a page overlap instead of coming one after the
 * other (a page of 50 reads ~1,000 scattered lines of a 230 MiB index):
 * 1. every contact's walk, its aggregates and picked messages kept;
 * 2. every picked message's columns read at once (independent loads);
 * 3. the first and last line of every string the page copies read (again independent);
 * 4. the bytes written, from what is now in the cache.
 */
export function writePage(
  out: BodyWriter,
  plan: Plan,
  s: Scratch,
  from: number,
  to: number,
  messagesLimit: number,
  withEntries: boolean,
): void {
  const { index } = plan;
  const n = to - from;
  const w = s.walk;
  if (s.pageItems.length < n * ITEM_WORDS) s.pageItems = new Int32Array(n * ITEM_WORDS);
  if (s.pagePicked.length < n * messagesLimit) s.pagePicked = new Uint32Array(n * messagesLimit);
  const items = s.pageItems;
  const picked = s.pagePicked;
  let sink = 0;
  let m = 0;
  for (let i = 0; i < n; i++) {
    const p = from + i;
    walkContact(
      plan,
      s,
      s.touched[p],
      messagesLimit,
      w,
      withEntries ? s.pageEntry[p] : -1,
      withEntries ? s.pageTerm[p] : 0,
    );
    const at = i * ITEM_WORDS;
    items[at] = w.count;
    items[at + 1] = w.conversations;
    items[at + 2] = w.newest;
    items[at + 3] = w.oldest;
    items[at + 4] = w.picked;
    for (let j = 0; j < w.picked; j++) picked[m++] = s.picked[j];
  }
  if (s.pageMessages.length < m * MESSAGE_WORDS) s.pageMessages = new Uint32Array(m * MESSAGE_WORDS);
  const msgs = s.pageMessages;
  const { conversationIdOffsets, contactConversationStart, msgConversation, msgCombo, msgSentLow } = index;
  for (let i = 0, j = 0; i < n; i++) {
    // (a message's conversation is numbered within its contact's)
    const first = contactConversationStart[s.touched[from + i]];
    for (const to = j + items[i * ITEM_WORDS + 4]; j < to; j++) {
      const o = picked[j];
      const conv = first + msgConversation[o];
      const at = j * MESSAGE_WORDS;
      // the row's bounds for now; its id's and content's are found in the next pass
      const start = rowStart(index, o);
      msgs[at] = start;
      msgs[at + 4] = rowEnd(index, o, start);
      msgs[at + 2] = conversationIdOffsets[conv];
      msgs[at + 3] = conversationIdOffsets[conv + 1];
      msgs[at + 5] = msgCombo[o] & COMBO_VALUE;
      if (msgSentLow[o] > 0) sink++;
    }
  }
  const { msgRowBytes, conversationIdBytes, contactJsonBytes, contactJsonOffsets } = index;
  for (let j = 0; j < m; j++) {
    const at = j * MESSAGE_WORDS;
    const row = msgs[at];
    sink ^= touch(msgRowBytes, row, msgs[at + 4]);
    sink ^= touch(conversationIdBytes, msgs[at + 2], msgs[at + 3]);
    // the id between its length prefix and the content, the content up to the row's end
    const idFrom = idStart(msgRowBytes, row),
      idTo = contentStart(msgRowBytes, row);
    msgs[at] = idFrom;
    msgs[at + 1] = idTo;
    msgs[at + 6] = isPacked(msgRowBytes, idFrom, idTo - idFrom) ? 1 : 0;
  }
  for (let i = 0; i < n; i++) {
    // the oldest counting message's time (first_matched_at; the newest is a picked one) and the contact
    const oldest = items[i * ITEM_WORDS + 3];
    if (msgSentLow[oldest] > 0) sink++;
    const c = s.touched[from + i];
    sink ^= touch(contactJsonBytes, contactJsonOffsets[c], contactJsonOffsets[c + 1]);
  }
  // used, so that the compiler keeps the reads
  s.sink = sink;
  m = 0;
  for (let i = 0; i < n; i++) {
    const at = i * ITEM_WORDS;
    writeItemHead(out, index, s, s.touched[from + i], items[at], items[at + 1], items[at + 2], items[at + 3], i === 0);
    const count = items[at + 4];
    for (let j = 0; j < count; j++, m++) {
      const at = m * MESSAGE_WORDS;
      if (msgs[at + 6] === 0) writeMessage(out, index, s.text, picked[m], msgs, at, j === 0);
      else writePackedMessage(out, index, s.text, picked[m], msgs, at, j === 0);
    }
    out.reserve(LAST_MESSAGE_ITEM_CLOSE.length);
    out.raw(count > 0 ? LAST_MESSAGE_ITEM_CLOSE : ITEM_CLOSE);
  }
}

/** Reads a byte of every cache line of bytes[from, to): a line not yet in the cache starts loading. */
function touch(bytes: Uint8Array, from: number, to: number): number {
  let x = 0;
  for (let p = from; p < to; p += 64) x ^= bytes[p];
  return to > from ? x ^ bytes[to - 1] : x;
}

/** Writes one message object (spec 2.3, full form) but its closing `"}` (see NEXT_MESSAGE_OPEN), from its gathered columns msgs[at ..]. */
function writeMessage(
  out: BodyWriter,
  index: OrgIndex,
  text: TextViews,
  o: number,
  msgs: Uint32Array,
  at: number,
  first: boolean,
): void {
  const idFrom = msgs[at],
    textFrom = msgs[at + 1], // the id's end
    textTo = msgs[at + 4];
  const convFrom = msgs[at + 2],
    convTo = msgs[at + 3];
  out.reserve(MESSAGE_FIXED + (textTo - idFrom) + (convTo - convFrom));
  out.raw(first ? MESSAGE_OPEN : NEXT_MESSAGE_OPEN);
  out.slice(text.msgRow, idFrom, textFrom);
  out.raw(CONVERSATION);
  out.slice(text.conversationId, convFrom, convTo);
  writeMessageRest(out, index, text, o, msgs, at);
}

/**
 * writeMessage for a message whose id is packed (msgs[at + 6] is 1: index/packed-uuid.ts). Apart,
 * so that writeMessage stays as it was for every other id.
 */
function writePackedMessage(
  out: BodyWriter,
  index: OrgIndex,
  text: TextViews,
  o: number,
  msgs: Uint32Array,
  at: number,
  first: boolean,
): void {
  const convFrom = msgs[at + 2],
    convTo = msgs[at + 3];
  // (the id is written 19 bytes longer than it is stored)
  out.reserve(MESSAGE_FIXED + UUID_TEXT_LENGTH + (msgs[at + 4] - msgs[at]) + (convTo - convFrom));
  out.raw(first ? MESSAGE_OPEN : NEXT_MESSAGE_OPEN);
  out.uuid(text.msgRow, msgs[at]);
  out.raw(CONVERSATION);
  out.slice(text.conversationId, convFrom, convTo);
  writeMessageRest(out, index, text, o, msgs, at);
}

/** A message's fields after its conversation id (reserved by the caller). */
function writeMessageRest(
  out: BodyWriter,
  index: OrgIndex,
  text: TextViews,
  o: number,
  msgs: Uint32Array,
  at: number,
): void {
  out.raw(COMBO[msgs[at + 5]]);
  out.slice(text.msgRow, msgs[at + 1], msgs[at + 4]);
  out.raw(SENT_AT);
  out.isoAt(index, o);
}

/** Writes a result item (spec 2.2) up to the opening of its messages. */
function writeItemHead(
  out: BodyWriter,
  index: OrgIndex,
  s: Scratch,
  c: number,
  count: number,
  conversations: number,
  newest: number,
  oldest: number,
  first: boolean,
): void {
  const from = index.contactJsonOffsets[c],
    to = index.contactJsonOffsets[c + 1];
  out.reserve(ITEM_FIXED + (to - from));
  out.raw(first ? ITEM_OPEN : NEXT_ITEM_OPEN);
  out.slice(s.text.contactJson, from, to);
  out.raw(MATCH_COUNT);
  out.uint(count);
  out.raw(CONVERSATIONS_COUNT);
  out.uint(conversations);
  out.raw(FIRST_MATCHED);
  out.isoAt(index, oldest);
  out.raw(LAST_MATCHED);
  out.isoAt(index, newest);
  out.raw(MESSAGES_OPEN);
}

/** Closes `data` and writes `pagination` and `query`: the end of every 200 body. */
export function writeTail(out: BodyWriter, req: SearchRequest, count: number, items: number): Uint8Array {
  const hasMore = req.offset + items < count;
  out.reserve(160);
  out.raw(PAGINATION);
  out.uint(req.limit);
  out.raw(OFFSET);
  out.uint(req.offset);
  out.raw(COUNT);
  out.uint(count);
  if (hasMore) {
    out.raw(HAS_MORE_TRUE);
    out.uint(req.offset + req.limit);
  } else {
    out.raw(HAS_MORE_FALSE);
  }
  writeQuery(out, req);
  return out.view();
}

/** The `query` object (spec 2.5) and the body's close. */
function writeQuery(out: BodyWriter, req: SearchRequest): void {
  // the organization id is a validated lower-case UUID: nothing in it to escape
  out.reserve(QUERY_ORG.length + req.organizationId.length + QUERY_TERMS.length);
  out.raw(QUERY_ORG);
  out.ascii(req.organizationId);
  out.raw(QUERY_TERMS);
  // terms are the user's text, escaped as JSON.stringify escapes them (a few short strings)
  out.jsonStrings(req.terms);
  const channel = QUERY_CHANNEL.get(req.channel);
  if (channel === undefined) throw new Error(`query: unknown channel ${req.channel}`);
  out.reserve(200);
  out.raw(QUERY_MATCH[req.match]);
  out.raw(QUERY_DIRECTION[req.direction]);
  out.raw(channel);
  writeInstant(out, req.from);
  out.raw(QUERY_TO);
  writeInstant(out, req.to);
  out.raw(BODY_CLOSE);
}

/** null, or the instant as toISOString writes it, quoted (reserved by the caller). */
function writeInstant(out: BodyWriter, ms: number | null): void {
  if (ms === null) {
    out.raw(NULL);
    return;
  }
  out.raw(QUOTE);
  out.iso(ms);
  out.raw(QUOTE);
}

/** This thread's writer, reset, with the body's opening written: items follow, then writeTail. */
export function openBody(): BodyWriter {
  const out = bodyWriter;
  out.reset();
  out.reserve(DATA_OPEN.length);
  out.raw(DATA_OPEN);
  return out;
}

/** The whole body of a page without items (count may still be above 0: an offset past the end). */
export function emptyBody(req: SearchRequest, count: number): Uint8Array {
  return writeTail(openBody(), req, count, 0);
}
