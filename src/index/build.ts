import { answerOrder } from './answer-order.js';
import { ConversationTable } from '../model/conversation-table.js';
import { Growable } from '../model/growable.js';
import type { Contact, OrgData } from '../model/records.js';
import { internTokens } from '../text/analyze.js';
import { TokenInterner } from '../text/token-interner.js';
import {
  CHANNEL_COUNT,
  comboOf,
  HEAD_INLINE,
  noInbound,
  NONE,
  rankMask,
  OUT_FAR,
  OUT_SHIFT,
  OUT_UNTIED,
  markTies,
  TOP_MODES,
  timeRanks,
} from './layout.js';
import { contactColumn, narrowColumn, type OrgIndex } from './org-index.js';
import { numberByContact } from './conversations.js';
import { buildEntrySummaries, SUMMARY_MIN_DEFAULT } from './entry-summaries.js';
import { rowsLength, rowStartsOf, writePrefix } from './message-rows.js';
import { encodeBlockStarts } from './block-starts.js';
import { PACKED_LENGTH, packUuid, UUID_TEXT_LENGTH, uuidCase } from './packed-uuid.js';
import { encodePostStarts } from './post-starts.js';
import { encodeSentTimes } from './sent-times.js';
import { jsonEscaped, StringColumnBuilder } from './string-column.js';
import { buildChannelBits } from './channel-bits.js';
import { buildTopLists, TOP_LIST_DEFAULTS, type TopListOptions } from './top-lists.js';
import { encodeTokenSeq, frequencyRanks } from './token-seq.js';

export type { OrgIndex } from './org-index.js';

/**
 * A contact's whole JSON object as a response carries it: full form, the spec's key order (never
 * the import's), every string as JSON.stringify writes it (see jsonEscaped).
 */
function contactJson(c: Contact): string {
  return JSON.stringify({
    id: c.id,
    organization_id: c.organization_id,
    name: c.name,
    phone: c.phone,
    email: c.email,
    avatar_url: c.avatar_url,
    source: c.source,
  });
}

function columns<P extends string>(
  prefix: P,
  b: StringColumnBuilder,
): Record<`${P}Bytes`, Uint8Array> & Record<`${P}Offsets`, Uint32Array> {
  const { bytes, offsets } = b.build();
  return { [prefix + 'Bytes']: bytes, [prefix + 'Offsets']: offsets } as Record<`${P}Bytes`, Uint8Array> &
    Record<`${P}Offsets`, Uint32Array>;
}

/** Copies string i of (bytes, offsets) to out[dest[i] ..], for every i < n, reading in order. */
function scatter(
  bytes: Uint8Array,
  offsets: Uint32Array,
  out: Uint8Array,
  dest: Uint32Array,
  n: number,
  idCase: Int8Array | null = null,
): void {
  for (let i = 0, q = offsets[0]; i < n; i++) {
    const end = offsets[i + 1];
    let d = dest[i];
    // an id in UUID form (idCase[i] >= 0) is written packed (packed-uuid.ts)
    if (idCase !== null && idCase[i] >= 0) packUuid(bytes, q, idCase[i], out, d);
    else if (end - q > 64) out.set(bytes.subarray(q, end), d);
    else for (let k = q; k < end; k++) out[d++] = bytes[k];
    q = end;
  }
}

export interface BuildOptions {
  /** tokens in at least this many messages get postings for their adjacent pairs (tests lower it) */
  pairMinFrequency?: number;
  /** receives the answer order (ordinal -> position in `data`), for a snapshot that gives the import back */
  onOrder?: (order: Uint32Array) => void;
  /** which tokens get precomputed first pages, and how long (tests shrink both) */
  topLists?: TopListOptions;
  /** entries of at least this many postings get summaries (entry-summaries.ts; tests lower it) */
  summaryMin?: number;
  /**
   * Empty each message's id, conversation id and content in `data` once copied into the index (the
   * three arrays end empty), and drop its prepared text (PublishOptions.consumeText): the caller
   * never reads them again, and the heap the build's collections mark shrinks as the first pass goes.
   */
  consumeText?: boolean;
  /**
   * false: every id kept as text, as builds before packing (packed-uuid.ts) wrote them: for the
   * tests of such snapshots, and for bench/ab-query.ts's `--unpacked-base`
   */
  packIds?: boolean;
}

/** Builds the immutable index of one organization from its snapshot columns. */
export function buildIndex(data: OrgData, options: BuildOptions = {}): OrgIndex {
  const m = data.messages;
  const n = m.count;
  // message ids: code units when the import prepared the text (no string a message), else strings
  const idColumn = data.prepared?.ids;
  const messageIdAt: (i: number) => string = idColumn !== undefined ? (i) => idColumn.at(i) : (i) => m.id[i];
  const order = answerOrder(m.sentAt, messageIdAt, n);
  options.onOrder?.(order);

  const contacts = data.contacts;
  const contactCount = contacts.length;
  const contactJsonColumn = new StringColumnBuilder();
  for (const c of contacts) contactJsonColumn.push(contactJson(c));
  const byId = contacts.map((_, i) => i).sort((a, b) => (contacts[a].id < contacts[b].id ? -1 : 1));
  const contactIdRank = new Uint32Array(contactCount);
  const contactByIdRank = Uint32Array.from(byId);
  byId.forEach((ord, rank) => {
    contactIdRank[ord] = rank;
  });

  const msgContact = new Uint32Array(n);
  // each message's conversation by first occurrence in answer order, until msgConversation is made from it
  const msgRank = new Uint32Array(n);
  const msgCombo = new Uint8Array(n);
  let msgSentAt: Float64Array | null = new Float64Array(n);
  // Pass 1, in import order: the per-message work that reads the messages' strings (escaping and
  // encoding, conversations, tokens). The heap holds those strings in import order, so this pass
  // reads them in sequence; in answer order every read was a cache miss (at 10M messages the
  // conversation lookup alone took 7.7 s). Conversations and tokens are numbered here by first
  // occurrence in import order, and renumbered below by first occurrence in answer order. An
  // import's data arrives with its text prepared (OrgData.prepared): here only its ids remain.
  const srcId = new StringColumnBuilder();
  const srcContent = new StringColumnBuilder();
  // tokens, escaped content and conversations prepared while the messages were read (the
  // import's reading threads), or made here
  const read = data.prepared;
  if (
    read !== undefined &&
    (read.seqStart.length !== n + 1 || read.content.offsets.length !== n + 1 || read.conversation.length !== n)
  )
    throw new Error(
      `index: prepared text for ${read.seqStart.length - 1} / ${read.content.offsets.length - 1} / ${read.conversation.length} messages, not ${n}`,
    );
  const ownConversation = read === undefined ? new Uint32Array(n) : null;
  const conversationTable = read?.conversations ?? new ConversationTable();
  const srcConversation = read?.conversation ?? ownConversation!;
  const interner = read?.interner ?? new TokenInterner();
  const ownSeqStart = read === undefined ? new Uint32Array(n + 1) : null;
  const ownSeq = read === undefined ? new Growable(n * 8) : null;
  const consume = options.consumeText === true;
  // the message strings are emptied as they are read (consumeText); prepared data holds none
  const consumeStrings = consume && read === undefined;
  for (let i = 0; i < n; i++) {
    const contact = m.contact[i];
    if (idColumn === undefined || !srcId.pushPlain(idColumn.units(), idColumn.start(i), idColumn.end(i)))
      srcId.push(jsonEscaped(messageIdAt(i)));
    if (read === undefined) srcContent.push(jsonEscaped(m.content[i]));
    if (ownConversation !== null) ownConversation[i] = conversationTable.idOf(contact, m.conversationId[i]);
    if (ownSeq !== null) {
      ownSeqStart![i] = ownSeq.length;
      internTokens(m.content[i], interner, ownSeq);
    }
    if (consumeStrings) {
      m.id[i] = '';
      m.conversationId[i] = '';
      m.content[i] = '';
    }
  }
  if (ownSeq !== null) ownSeqStart![n] = ownSeq.length;
  // every string is copied: the arrays go too (at 10M messages, three arrays of 10M slots that
  // each later mark-compact visited: ~150 ms a collection, and the snapshot's writing triggers
  // one every 64 MB it allocates)
  if (consume) m.id.length = m.conversationId.length = m.content.length = 0;
  // the ids are in srcId now (at 10M messages their code units take ~0.2-0.4 GB)
  if (consume) idColumn?.release();
  const srcSeqStart = read?.seqStart ?? ownSeqStart!;
  const srcTokens = read?.seq ?? ownSeq!.buf;
  const srcSeqLength = srcSeqStart[n];

  // Pass 2, in answer order (ordinal o): the columns, the byte columns copied from pass 1's, and
  // conversations and tokens renumbered by first occurrence, as the index has always numbered them.
  const ids = srcId.view();
  const contents = read?.content ?? srcContent.view();
  // each message's id and content in one row (message-rows.ts), the id after its length prefix;
  // an id in UUID form packed (packed-uuid.ts): its letters' case a message, -1 for text
  const idCase = new Int8Array(n).fill(-1);
  let packedSaving = 0;
  for (let i = 0; i < n && options.packIds !== false; i++) {
    const letterCase = uuidCase(ids.bytes, ids.offsets[i], ids.offsets[i + 1]);
    idCase[i] = letterCase;
    if (letterCase >= 0) packedSaving += UUID_TEXT_LENGTH - PACKED_LENGTH;
  }
  const msgRowBytes = new Uint8Array(rowsLength(ids.offsets, contents.bytes.length) - packedSaving);
  const msgRowOffsets = new Uint32Array(n + 1);
  const conversationCount = conversationTable.size;
  const conversationRank = new Uint32Array(conversationCount).fill(NONE);
  const conversationByRank = new Uint32Array(conversationCount);
  let conversations = 0;
  const tokenRenumber = new Uint32Array(interner.size).fill(NONE);
  let vocabulary = 0;
  // the token sequences in answer order; let go once encoded (below), before the postings exist
  let seqStart: Uint32Array | null = new Uint32Array(n + 1);
  let seq: Uint32Array | null = new Uint32Array(srcSeqLength);
  const contactMessages = new Uint32Array(contactCount + 1);
  // where message i's id and content go (their bytes are copied after this loop, in import order)
  let idDest: Uint32Array | null = new Uint32Array(n);
  let contentDest: Uint32Array | null = new Uint32Array(n);
  let rowAt = 0,
    k = 0;
  for (let o = 0; o < n; o++) {
    const i = order[o];
    const contact = m.contact[i];
    msgContact[o] = contact;
    contactMessages[contact + 1]++;
    msgCombo[o] = comboOf(m.direction[i], m.channel[i]);
    msgSentAt[o] = m.sentAt[i];
    msgRowOffsets[o] = rowAt;
    const idLength = idCase[i] >= 0 ? PACKED_LENGTH : ids.offsets[i + 1] - ids.offsets[i];
    const idAt = writePrefix(msgRowBytes, rowAt, idLength);
    idDest[i] = idAt;
    contentDest[i] = idAt + idLength;
    rowAt = idAt + idLength + contents.offsets[i + 1] - contents.offsets[i];
    const conv = srcConversation[i];
    let rank = conversationRank[conv];
    if (rank === NONE) {
      rank = conversationRank[conv] = conversations++;
      conversationByRank[rank] = conv;
    }
    msgRank[o] = rank;
    seqStart[o] = k;
    for (let q = srcSeqStart[i], end = srcSeqStart[i + 1]; q < end; q++) {
      const t = srcTokens[q];
      let id = tokenRenumber[t];
      if (id === NONE) id = tokenRenumber[t] = vocabulary++;
      seq[k++] = id;
    }
  }
  msgRowOffsets[n] = rowAt;
  // a word a message and a base a block (sent-times.ts); the epoch-ms column is let go here
  const sentTimes = encodeSentTimes(msgSentAt);
  msgSentAt = null;
  const rowStarts = rowStartsOf(encodeBlockStarts(msgRowOffsets));
  // The bytes, read in import order (in sequence) and written where answer order puts them: a
  // scattered write does not stall the loop as a scattered read does, and a byte loop costs less
  // than a Buffer#copy call for strings this short.
  scatter(ids.bytes, ids.offsets, msgRowBytes, idDest, n, idCase);
  scatter(contents.bytes, contents.offsets, msgRowBytes, contentDest, n);
  idDest = contentDest = null;
  seqStart[n] = k;
  // the prepared content and tokens are copied: the caller's data lets go of them now, not after
  // the snapshot is written (they are ~100 MB at 1M messages; the interner is read below, held here)
  if (consume) data.prepared = undefined;
  // conversations numbered contact by contact (conversations.ts), as a loader renumbers a
  // snapshot of the layout before: the ordinal is contactConversationStart[contact] + the number
  const numbering = numberByContact(msgRank, msgContact, conversationCount, contactCount);
  if (numbering === null) throw new Error('index: a conversation of two contacts'); // interned per contact: cannot happen
  const contactConversationStart = numbering.start;
  const byOrdinal = new Uint32Array(conversationCount);
  for (let r = 0; r < conversationCount; r++) byOrdinal[numbering.ordinal[r]] = conversationByRank[r];
  const conversationIds = new StringColumnBuilder();
  const convIds = conversationTable.ids.view();
  for (let g = 0; g < conversationCount; g++) {
    const c = byOrdinal[g];
    conversationIds.pushBytes(convIds.bytes, convIds.offsets[c], convIds.offsets[c + 1]);
  }
  const msgConversation = narrowColumn(numbering.most, n);
  for (let o = 0; o < n; o++) msgConversation[o] = numbering.number[msgRank[o]];
  const tokenOf: string[] = new Array(vocabulary);
  interner.tokens().forEach((token, t) => {
    tokenOf[tokenRenumber[t]] = token;
  });
  const tokenIds = new Map(tokenOf.map((token, id) => [token, id] as const));

  // Adjacent pairs of frequent tokens get postings of their own ("pseudo-tokens" numbered after
  // the vocabulary): a phrase of common words is then one lookup instead of verifying hundreds
  // of thousands of messages, and a pair absent from the map proves the phrase matches nothing.
  const df = new Uint32Array(vocabulary);
  const lastMessage = new Uint32Array(vocabulary).fill(NONE);
  for (let o = 0; o < n; o++) {
    // (k and end typed: seq and seqStart are let go below, and TypeScript cannot infer them here)
    for (let k: number = seqStart[o], end: number = seqStart[o + 1]; k < end; k++) {
      const t = seq[k];
      if (lastMessage[t] !== o) {
        lastMessage[t] = o;
        df[t]++;
      }
    }
  }
  // Tokens in 2% of the messages: at 1M (44k words) 96 tokens, 3.7k pairs, +31 MiB of sections
  // (+13%); a phrase of two such words went from 2.9-3.8 ms (checked message by message, at 5%)
  // to 0.19 ms (bench/RESULTS.md, issue 11 session 4).
  const pairMinFrequency = options.pairMinFrequency ?? Math.max(1000, Math.ceil(n / 50));
  const frequent = new Uint8Array(vocabulary);
  for (let t = 0; t < vocabulary; t++) frequent[t] = df[t] >= pairMinFrequency ? 1 : 0;

  // The key stream: every message's keys (its tokens, each followed by the pseudo-token of its
  // pair with the token before, if any), laid out contact by contact, ascending ordinal within a
  // contact, with the message's ordinal, combo and time rank beside it in the same order. The two
  // passes below read it in sequence; read through the ordinal, every message was a cache miss in
  // each of them (at 10M messages, ~10 s of the build's 53).
  for (let c = 0; c < contactCount; c++) contactMessages[c + 1] += contactMessages[c];
  const contactKeys = new Uint32Array(contactCount + 1);
  for (let o = 0; o < n; o++) {
    const from = seqStart[o],
      end = seqStart[o + 1];
    let keys = end - from;
    for (let k = from + 1; k < end; k++) keys += frequent[seq[k - 1]] & frequent[seq[k]];
    contactKeys[msgContact[o] + 1] += keys;
  }
  for (let c = 0; c < contactCount; c++) contactKeys[c + 1] += contactKeys[c];
  // (all let go after the fill below: at 10M messages ~0.7 GB the summaries and top lists need)
  let stream: Uint32Array | null = new Uint32Array(contactKeys[contactCount]);
  // per position p in contact order: where message p's keys start in the stream, its ordinal, combo, time rank
  let streamStart: Uint32Array | null = new Uint32Array(n + 1);
  let byContact: Uint32Array | null = new Uint32Array(n);
  let comboByContact: Uint8Array | null = new Uint8Array(n);
  let rankByContact: Uint32Array | null = new Uint32Array(n);
  // The time rank of ordinal o is the first ordinal with the same sent_at, so equal times tie.
  // One linear pass (build scratch, not kept): walking back per entry was quadratic when many
  // messages share one sent_at (bulk-migrated data stamped with a date).
  const timeRank = timeRanks(sentTimes);
  const messageCursor = contactMessages.slice(0, contactCount);
  const keyCursor = contactKeys.slice(0, contactCount);
  const pairIds = new Map<number, number>();
  for (let o = 0; o < n; o++) {
    const contact = msgContact[o];
    const p = messageCursor[contact]++;
    byContact[p] = o;
    comboByContact[p] = msgCombo[o];
    rankByContact[p] = timeRank[o];
    let q = keyCursor[contact];
    streamStart[p] = q;
    const from = seqStart[o],
      end = seqStart[o + 1];
    for (let k = from; k < end; k++) {
      const b = seq[k];
      stream[q++] = b;
      if (k === from) continue;
      const a = seq[k - 1];
      if ((frequent[a] & frequent[b]) === 0) continue;
      // pairs are numbered by first occurrence in answer order (this loop's)
      const key = a * vocabulary + b;
      let id = pairIds.get(key);
      if (id === undefined) {
        id = vocabulary + pairIds.size;
        pairIds.set(key, id);
      }
      stream[q++] = id;
    }
    keyCursor[contact] = q;
  }
  streamStart[n] = stream.length;
  const keyCount = vocabulary + pairIds.size;

  // Kept for phrase adjacency: varints of frequency ranks, not 32-bit ids (token-seq.ts). The
  // 32-bit sequences go now: at 10M messages ~0.5 GB that the postings need next.
  const tokenRank = frequencyRanks(seq, vocabulary);
  const seqStarts = encodeTokenSeq(seq, seqStart, tokenRank);
  seq = seqStart = null;

  // Postings and entries per token and pair, counted first, then filled. Walking messages
  // contact by contact makes each token's postings come out grouped by contact.
  //
  // The count also decides which entries keep their first message inline (layout.ts,
  // HEAD_INLINE): an inbound first message with a time of its own, or an outbound one with no
  // inbound message after it in the entry. Entries are made in the same order by both passes,
  // so the decisions go by that order (a bit an entry), and the fill allocates and writes only
  // the stored postings (the full list at 10M was ~0.5 GB more at the build's peak).
  const keyDf = new Uint32Array(keyCount);
  const keyInline = new Uint32Array(keyCount);
  const entries = new Uint32Array(keyCount);
  const lastSeen = new Uint32Array(keyCount).fill(NONE);
  const lastContact = new Uint32Array(keyCount).fill(NONE);
  // per key: the creation number of its current entry, and whether that entry's head is an
  // outbound message no inbound one has followed yet (inline unless one does)
  const currentMade = new Uint32Array(keyCount);
  const outboundHead = new Uint8Array(keyCount);
  const inlineBits = new Uint32Array((stream.length >>> 5) + 1);
  let made = 0;
  const visit = (c: number, p: number, t: number): void => {
    if (lastSeen[t] === p) return;
    lastSeen[t] = p;
    keyDf[t]++;
    const inbound = comboByContact![p] < CHANNEL_COUNT;
    if (lastContact[t] !== c) {
      lastContact[t] = c;
      entries[t]++;
      const k = made++;
      currentMade[t] = k;
      outboundHead[t] = inbound ? 0 : 1;
      if (!inbound || rankByContact![p] === byContact![p]) {
        inlineBits[k >>> 5] |= 1 << (k & 31);
        keyInline[t]++;
      }
    } else if (inbound && outboundHead[t] === 1) {
      // an inbound message after an outbound head: entryNewestIn holds its rank, the head is stored
      outboundHead[t] = 0;
      const k = currentMade[t];
      inlineBits[k >>> 5] &= ~(1 << (k & 31));
      keyInline[t]--;
    }
  };
  for (let c = 0; c < contactCount; c++) {
    for (let p = contactMessages[c]; p < contactMessages[c + 1]; p++) {
      for (let q = streamStart[p], end = streamStart[p + 1]; q < end; q++) visit(c, p, stream[q]);
    }
  }
  const entryStart = new Uint32Array(keyCount + 1);
  const postStartOfKey = new Uint32Array(keyCount + 1);
  for (let t = 0; t < keyCount; t++) {
    entryStart[t + 1] = entryStart[t] + entries[t];
    postStartOfKey[t + 1] = postStartOfKey[t] + keyDf[t] - keyInline[t];
  }
  const entryCount = entryStart[keyCount];
  const entryContact = contactColumn(contactCount, entryCount);
  const entryPostStart = new Uint32Array(entryCount + 1);
  const entryFlags = new Uint16Array(entryCount);
  // Per entry, the time rank of its newest inbound message (or noInbound and its inline head),
  // and in its flags where its newest outbound message is (layout.ts): an unfiltered-by-channel,
  // undated query then decides a contact from one sequential read (inbound, the default) or one
  // posting more. An entry's messages come newest first, so its first of each direction is its newest.
  // (one word more: the end's posting start goes in its high bits; post-starts.ts)
  const entryNewestIn = new Uint32Array(entryCount + 1).fill(rankMask(n));
  const inboundNone = noInbound(n);
  const storedPostings = new Uint32Array(postStartOfKey[keyCount]);
  const entryFill = entryStart.slice(0, keyCount);
  const postFill = postStartOfKey.slice(0, keyCount);
  const currentEntry = new Uint32Array(keyCount);
  // per key, the directions its current entry has had a message of (1 inbound, 2 outbound), and
  // whether its head is inline (messages of the entry before the stored ones)
  const directions = new Uint8Array(keyCount);
  const headInline = new Uint8Array(keyCount);
  lastSeen.fill(NONE);
  lastContact.fill(NONE);
  made = 0;
  const fill = (c: number, o: number, t: number, combo: number, rank: number): void => {
    if (lastSeen[t] === o) return;
    lastSeen[t] = o;
    let e = currentEntry[t];
    // the message's position in its entry (0: the head)
    let at: number;
    if (lastContact[t] !== c) {
      lastContact[t] = c;
      e = entryFill[t]++;
      currentEntry[t] = e;
      entryContact[e] = c;
      entryPostStart[e] = postFill[t];
      directions[t] = 0;
      const k = made++;
      const inline = (inlineBits[k >>> 5] >>> (k & 31)) & 1;
      headInline[t] = inline;
      at = 0;
      if (inline !== 0) {
        entryFlags[e] |= HEAD_INLINE;
        // an inline outbound head: the entry has no inbound message (the count saw to it)
        if (combo >= CHANNEL_COUNT) entryNewestIn[e] = inboundNone | o;
      } else storedPostings[postFill[t]++] = o;
    } else {
      const p = postFill[t]++;
      storedPostings[p] = o;
      at = p - entryPostStart[e] + headInline[t];
    }
    entryFlags[e] |= 1 << combo;
    const seen = directions[t];
    if (combo < CHANNEL_COUNT) {
      if ((seen & 1) === 0) {
        directions[t] = seen | 1;
        entryNewestIn[e] = rank;
      }
    } else if ((seen & 2) === 0) {
      directions[t] = seen | 2;
      entryFlags[e] |= (Math.min(at + 1, OUT_FAR) << OUT_SHIFT) | (rank === o ? OUT_UNTIED : 0);
    }
  };
  for (let c = 0; c < contactCount; c++) {
    for (let p = contactMessages[c]; p < contactMessages[c + 1]; p++) {
      const o = byContact[p];
      const combo = comboByContact[p];
      const rank = rankByContact[p];
      for (let q = streamStart[p], end = streamStart[p + 1]; q < end; q++) fill(c, o, stream[q], combo, rank);
    }
  }
  entryPostStart[entryCount] = storedPostings.length;
  stream = streamStart = byContact = rankByContact = null;
  comboByContact = null;

  const postStarts = encodePostStarts(entryPostStart, entryNewestIn, n);
  const summaries = buildEntrySummaries(
    {
      ...postStarts,
      messageCount: n,
      entryCount,
      entryFlags,
      entryNewestIn,
      storedPostings,
      msgCombo,
      msgConversation,
      conversationCount,
    },
    options.summaryMin ?? SUMMARY_MIN_DEFAULT,
  );
  const top = buildTopLists(
    {
      entryStart,
      entryContact,
      entryNewestIn,
      entryFlags,
      ...postStarts,
      messageCount: n,
      storedPostings,
      msgCombo,
      ...sentTimes,
      contactIdRank,
      contactByIdRank,
    },
    options.topLists ?? TOP_LIST_DEFAULTS,
  );
  const channelBits = buildChannelBits(entryStart, entryFlags, top.topSlot, top.topCount.length / TOP_MODES);

  // last: every use above reads msgCombo as the combo alone
  markTies(sentTimes, msgCombo);
  return {
    organizationId: data.organizationId,
    messageCount: n,
    contactCount,
    ...columns('contactJson', contactJsonColumn),
    contactIdRank,
    contactByIdRank,
    msgConversation,
    contactConversationStart,
    msgCombo,
    ...sentTimes,
    msgRowBytes,
    ...rowStarts,
    ...columns('conversationId', conversationIds),
    tokenIds,
    pairIds,
    pairMinFrequency,
    entryStart,
    entryContact,
    ...postStarts,
    entryFlags,
    entryNewestIn,
    storedPostings,
    keyFrequency: keyDf,
    ...summaries,
    tokenRank,
    ...seqStarts,
    ...top,
    ...channelBits,
  };
}
