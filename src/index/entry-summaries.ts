/**
 * Summaries of long entries: for every (token, contact) entry with at least `min` messages, per
 * direction mode (INBOUND, OUTBOUND, BOTH: layout.ts) the exact match_count, conversations_count
 * and oldest ordinal (first_matched_at) of an unfiltered one-token query. Rendering such a contact
 * then reads its first few postings (the newest and the page's messages), not all of them: a
 * contact with 971 messages of "que" cost ~3,000 scattered reads a request (msgCombo,
 * msgConversation, a conversation stamp each), most of a served common-term request's walk.
 *
 * Short entries have none: walking them costs less than finding a summary. At 1M messages
 * entries of 32 postings or more are 0.17% of the entries and hold 5.2% of the postings; their
 * summaries take 0.45 bytes a message. (In process, a minimum of 16 (1.9 B a message) was no
 * faster than 32 or 64: 31-33 µs for the common term against 29.5.)
 */
import {
  BOTH,
  CHANNEL_COUNT,
  COMBO_VALUE,
  entryHead,
  HEAD_INLINE,
  INBOUND,
  NONE,
  OUTBOUND,
  TOP_MODES,
} from './layout.js';
import { lowerBound } from './lower-bound.js';
import { type PostStarts, postStart } from './post-starts.js';

/** Postings an entry needs for a summary (the build option's default; tests lower it). */
export const SUMMARY_MIN_DEFAULT = 32;

/** Values per summarized entry: per mode, count, conversations, oldest ordinal (NONE if no message). */
export const SUMMARY_WIDTH = 3 * TOP_MODES;

/** The summary sections (OrgIndex has them). */
export interface EntrySummaries {
  /** one value: the `min` the summaries were built with (an entry with fewer postings has none) */
  readonly summaryMin: Uint32Array;
  /** ascending ids of the summarized entries */
  readonly summaryEntries: Uint32Array;
  /** SUMMARY_WIDTH values per summarized entry, in summaryEntries' order: [mode * 3 + 0..2] */
  readonly summaryValues: Uint32Array;
}

/** The names of the summary sections (a snapshot's loader derives them all when a snapshot lacks them). */
export const SUMMARY_SECTIONS = ['summaryMin', 'summaryEntries', 'summaryValues'] as const satisfies ReadonlyArray<
  keyof EntrySummaries
>;

/** What the build (or a loader, for a snapshot written before summaries) passes. */
export interface SummarySource extends PostStarts {
  readonly entryCount: number;
  /** HEAD_INLINE: the entry's first message is entryHead's, not stored (layout.ts) */
  readonly entryFlags: Uint16Array;
  readonly entryNewestIn: Uint32Array;
  readonly storedPostings: Uint32Array;
  readonly msgCombo: Uint8Array;
  /** a message's conversation: any numbering that tells one contact's conversations apart, below conversationCount */
  readonly msgConversation: Uint16Array | Uint32Array;
  readonly conversationCount: number;
}

/** Messages of entry e: its stored postings and its inline head. */
function messagesOf(x: SummarySource, e: number): number {
  return postStart(x, e + 1) - postStart(x, e) + ((x.entryFlags[e] & HEAD_INLINE) !== 0 ? 1 : 0);
}

/** Summaries of every entry of `x` with at least `min` messages (min >= 1). */
export function buildEntrySummaries(x: SummarySource, min: number): EntrySummaries {
  if (!(Number.isSafeInteger(min) && min >= 1)) throw new Error(`index: summary minimum must be >= 1, got ${min}`);
  const { entryCount, storedPostings: postings, msgCombo, msgConversation } = x;
  let count = 0;
  for (let e = 0; e < entryCount; e++) if (messagesOf(x, e) >= min) count++;
  const summaryEntries = new Uint32Array(count);
  const summaryValues = new Uint32Array(count * SUMMARY_WIDTH);
  // a conversation is counted once per entry and mode: the stamp of the last entry that counted it
  const stampIn = new Uint32Array(x.conversationCount),
    stampOut = new Uint32Array(x.conversationCount),
    stampBoth = new Uint32Array(x.conversationCount);
  let i = 0;
  for (let e = 0; e < entryCount; e++) {
    if (messagesOf(x, e) < min) continue;
    const tag = i + 1;
    const v = i * SUMMARY_WIDTH;
    summaryValues[v + INBOUND * 3 + 2] = summaryValues[v + OUTBOUND * 3 + 2] = NONE;
    const add = (o: number): void => {
      const conv = msgConversation[o];
      const inbound = (msgCombo[o] & COMBO_VALUE) < CHANNEL_COUNT;
      const at = v + (inbound ? INBOUND : OUTBOUND) * 3;
      const stamp = inbound ? stampIn : stampOut;
      summaryValues[at]++;
      if (stamp[conv] !== tag) {
        stamp[conv] = tag;
        summaryValues[at + 1]++;
      }
      summaryValues[at + 2] = o; // messages ascend: the last one is the oldest
      const both = v + BOTH * 3;
      summaryValues[both]++;
      if (stampBoth[conv] !== tag) {
        stampBoth[conv] = tag;
        summaryValues[both + 1]++;
      }
      summaryValues[both + 2] = o;
    };
    if ((x.entryFlags[e] & HEAD_INLINE) !== 0) add(entryHead(x, e));
    for (let p = postStart(x, e), end = postStart(x, e + 1); p < end; p++) add(postings[p]);
    summaryEntries[i++] = e;
  }
  return { summaryMin: Uint32Array.of(min), summaryEntries, summaryValues };
}

/** Where entry e's values start in summaryValues, or -1 when it has no summary. */
export function summaryAt(x: EntrySummaries, e: number): number {
  const entries = x.summaryEntries;
  const i = lowerBound(entries, 0, entries.length, e);
  return i < entries.length && entries[i] === e ? i * SUMMARY_WIDTH : -1;
}
