import { bitmapWords } from '../index/layout.js';
import { type ContactColumn, contactColumnType, type OrgIndex } from '../index/org-index.js';
import { MAX_TERMS } from '../request/terms.js';
import { bytesOf, type Bytes } from './body-writer.js';

// spec 8: messages_limit is at most 20 (searchBody grows picked for anything larger)
const MAX_MESSAGES_LIMIT = 20;

/** The index's byte columns a body copies from, as the views BodyWriter copies with. */
export interface TextViews {
  /** message rows: id and content (message-rows.ts) */
  msgRow: Bytes;
  conversationId: Bytes;
  contactJson: Bytes;
}

/**
 * Working memory reused by every query of this thread (queries run synchronously, one at a time,
 * so one set is enough), whatever organization it reads: its per-contact and per-conversation
 * arrays are as long as the largest organization's queried so far, and a query reads only the
 * first contactCount (or conversation count) of them. A generation stamp replaces clearing
 * between queries. It was one set an index: about 40 KB an organization a serving thread, kept
 * as long as the index (1,000 small organizations each queried once: RSS +40 MB).
 */
export interface Scratch {
  generation: number;
  /** sort keys of the matching contacts (see matchContacts in match.ts) */
  keys: Float64Array;
  /** max-heap for choosing the smallest keys of a page */
  heap: Float64Array;
  /**
   * per conversation number within a contact (msgConversation): the conversationGeneration of the
   * walk that last counted it. Sized by the organization's conversations, but a walk touches only
   * the first few entries (one contact's): with a stamp over every conversation of the
   * organization, read at scattered places, multi-term pages took 1-4% longer (bench/RESULTS.md,
   * session 27).
   */
  conversationStamp: Uint32Array;
  /** one a walk of a contact (nextConversationGeneration in walk.ts) */
  conversationGeneration: number;
  /** per contact ordinal, for several terms: generation seen, newest rank, terms passed */
  contactStamp: Uint32Array;
  contactBest: Uint32Array;
  contactHits: Uint8Array;
  /** contact ordinals seen by this query, in first-seen order */
  touched: Uint32Array;
  /** a top-list page's (top-page.ts) entry of each contact in touched, and the term whose list gave it */
  pageEntry: Uint32Array;
  pageTerm: Uint8Array;
  /** per term of a several-term walk: position and end in postings (or in a top list) */
  pos: Uint32Array;
  end: Uint32Array;
  /** per term of a walk: its entry's inline head (layout.ts, HEAD_INLINE) when still to be read, else NONE */
  head: Uint32Array;
  /** per term of a walk: the contact's position in the term's view (a phrase's check reads it), or -1 */
  at: Int32Array;
  /** a many-term walk's messages of one contact, one run a term (walkUnion), grown when needed */
  gather: Uint32Array;
  /** walkUnion's conversation ids of those messages (as long as gather) and the runs' starts */
  convs: Uint32Array;
  runs: Uint32Array;
  /**
   * One bit a message ordinal, for walkUnion's "seen under an earlier term": all zero between
   * walks (each clears the bits it set), grown to the largest organization walked so far.
   */
  messageBits: Int32Array;
  /** walkUnion's cursors: per run of gather, its next position and its end */
  runPos: Uint32Array;
  runEnd: Uint32Array;
  /** per term of a top-list merge (top-page.ts): the key at its list's cursor */
  heads: Float64Array;
  /** one contact bitmap: the contacts that match every term (top-page.ts) */
  bits: Int32Array;
  /** the walk of one contact: its aggregates, and its first messages in picked */
  walk: { count: number; conversations: number; newest: number; oldest: number; picked: number };
  picked: Uint32Array;
  /** per term slot, a phrase view's positions (see termView), allocated on first use */
  viewContact: Array<ContactColumn | undefined>;
  viewEntry: Array<Uint32Array | undefined>;
  viewCoEntry: Array<Uint32Array | undefined>;
  text: TextViews;
  /**
   * entryFlags as 32-bit words, entry 2i in the low half of word i, for reading two entries' flags
   * at once (match.ts, matchFiltered); null on a big-endian machine or an unaligned column
   */
  flagPairs: Uint32Array | null;
  /** a page's walks, its picked messages and their columns (render.ts, writePage), grown when needed */
  pageItems: Int32Array;
  pagePicked: Uint32Array;
  pageMessages: Uint32Array;
  /** where writePage leaves what its cache-warming reads add up to, so that they are kept */
  sink: number;
}

/** An index's own views in the scratch (text, flagPairs): made once per index, not per query. */
interface IndexViews {
  text: TextViews;
  flagPairs: Uint32Array | null;
}

const indexViews = new WeakMap<OrgIndex, IndexViews>();
let shared: Scratch | null = null;
/** The contact count the phrase view slots were last fitted to (see fitViewSlots). */
let slotsFitted = -1;

/** Views of no index: what the scratch holds between queries (releaseIndexViews). */
const NO_BYTES = bytesOf(new Uint8Array(0));
const NO_TEXT: TextViews = { msgRow: NO_BYTES, conversationId: NO_BYTES, contactJson: NO_BYTES };

/**
 * Lets go of the last queried index's views (text, flagPairs), once its query is done. The
 * scratch outlives every index, so its views kept a replaced version's sections alive (views of
 * their SharedArrayBuffers): after a reload while queries were answered, a review saw both
 * versions' sections stay mapped (two 55 MB at 300k messages) until the next reload.
 */
export function releaseIndexViews(): void {
  if (shared === null) return;
  shared.text = NO_TEXT;
  shared.flagPairs = null;
}

/** This thread's scratch, fitted to `index` and in a new generation. */
export function scratchFor(index: OrgIndex): Scratch {
  let views = indexViews.get(index);
  if (views === undefined) {
    views = {
      text: {
        msgRow: bytesOf(index.msgRowBytes),
        conversationId: bytesOf(index.conversationIdBytes),
        contactJson: bytesOf(index.contactJsonBytes),
      },
      flagPairs: flagPairsOf(index.entryFlags),
    };
    indexViews.set(index, views);
  }
  const s = (shared ??= newScratch(views));
  const contacts = index.contactCount;
  const conversations = index.conversationIdOffsets.length - 1;
  if (s.keys.length < contacts) growContacts(s, contacts);
  if (s.conversationStamp.length < conversations) s.conversationStamp = new Uint32Array(conversations);
  if (s.bits.length < bitmapWords(contacts)) s.bits = new Int32Array(bitmapWords(contacts));
  s.text = views.text;
  s.flagPairs = views.flagPairs;
  if (contacts !== slotsFitted) fitViewSlots(s, contacts);
  nextGeneration(s);
  return s;
}

function newScratch(views: IndexViews): Scratch {
  return {
    generation: 0,
    keys: new Float64Array(0),
    heap: new Float64Array(0),
    conversationStamp: new Uint32Array(0),
    conversationGeneration: 0,
    contactStamp: new Uint32Array(0),
    contactBest: new Uint32Array(0),
    contactHits: new Uint8Array(0),
    touched: new Uint32Array(0),
    pageEntry: new Uint32Array(0),
    pageTerm: new Uint8Array(0),
    pos: new Uint32Array(MAX_TERMS),
    end: new Uint32Array(MAX_TERMS),
    head: new Uint32Array(MAX_TERMS),
    at: new Int32Array(MAX_TERMS),
    gather: new Uint32Array(4096),
    convs: new Uint32Array(4096),
    runs: new Uint32Array(MAX_TERMS + 1),
    messageBits: new Int32Array(0),
    runPos: new Uint32Array(MAX_TERMS),
    runEnd: new Uint32Array(MAX_TERMS),
    heads: new Float64Array(MAX_TERMS),
    bits: new Int32Array(0),
    walk: { count: 0, conversations: 0, newest: -1, oldest: -1, picked: 0 },
    picked: new Uint32Array(MAX_MESSAGES_LIMIT),
    viewContact: new Array<ContactColumn | undefined>(MAX_TERMS).fill(undefined),
    viewEntry: new Array<Uint32Array | undefined>(MAX_TERMS).fill(undefined),
    viewCoEntry: new Array<Uint32Array | undefined>(MAX_TERMS).fill(undefined),
    text: views.text,
    flagPairs: views.flagPairs,
    pageItems: new Int32Array(0),
    pagePicked: new Uint32Array(0),
    pageMessages: new Uint32Array(0),
    sink: 0,
  };
}

/** The per-contact arrays, `contacts` long (zeroed: a stamp of 0 reads as unseen). */
function growContacts(s: Scratch, contacts: number): void {
  s.keys = new Float64Array(contacts);
  s.heap = new Float64Array(contacts);
  s.contactStamp = new Uint32Array(contacts);
  s.contactBest = new Uint32Array(contacts);
  s.contactHits = new Uint8Array(contacts);
  s.touched = new Uint32Array(contacts);
  s.pageEntry = new Uint32Array(contacts);
  s.pageTerm = new Uint8Array(contacts);
}

/**
 * A phrase view's slots (term-view.ts) are made on first use with the index's contact column
 * type: one too short, or of the other type, is dropped here, to be made again for this index.
 * Run when the contact count changes from the last fit (slots made since fit that count).
 */
function fitViewSlots(s: Scratch, contacts: number): void {
  const wide = contactColumnType(contacts) === 'Uint32Array';
  for (let j = 0; j < MAX_TERMS; j++) {
    const c = s.viewContact[j];
    if (c !== undefined && (c.length < contacts || c instanceof Uint32Array !== wide)) s.viewContact[j] = undefined;
    const e = s.viewEntry[j];
    if (e !== undefined && e.length < contacts) s.viewEntry[j] = undefined;
    const co = s.viewCoEntry[j];
    if (co !== undefined && co.length < contacts) s.viewCoEntry[j] = undefined;
  }
  slotsFitted = contacts;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The flags as words of two entries (see Scratch.flagPairs), or null. */
function flagPairsOf(flags: Uint16Array): Uint32Array | null {
  if (!LITTLE_ENDIAN || flags.byteOffset % 4 !== 0) return null;
  return new Uint32Array(flags.buffer, flags.byteOffset, flags.length >>> 1);
}

/** Starts a new generation: every stamp of the previous one reads as unseen. */
export function nextGeneration(s: Scratch): void {
  if (++s.generation === 0xffffffff) {
    s.generation = 1;
    s.contactStamp.fill(0);
  }
}
