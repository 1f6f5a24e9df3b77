/**
 * Conversations numbered contact by contact (OrgIndex.msgConversation, contactConversationStart):
 * a message keeps its conversation's number among its contact's, and the conversation's ordinal
 * (its place in the conversation id column) is contactConversationStart[contact] + that number.
 * The layout before numbered every conversation of the organization in one sequence, a Uint32 a
 * message; its snapshots are renumbered on load (numberByContact) from their export section
 * msgContact, so they keep loading without being published again.
 */
import { type ConversationColumn, narrowColumnType } from './org-index.js';

/** The numbering of the layout before, by contact: what a loader needs to renumber it. */
export interface ContactNumbering {
  /** the first ordinal of each contact's conversations, contactCount + 1 of them */
  readonly start: Uint32Array;
  /** the most conversations of one contact */
  readonly most: number;
  /** per conversation of the layout before: its ordinal in the new numbering */
  readonly ordinal: Uint32Array;
  /** per conversation of the layout before: its number among its contact's */
  readonly number: Uint32Array;
}

const UNSEEN = 0xffffffff;

/**
 * Conversations `global` (one a message, below `count`) renumbered by contact, each numbered by its
 * first message in ordinal (answer) order, as the build numbers them; null when the columns
 * disagree: a conversation of two contacts, a conversation or contact out of range, or a
 * conversation no message has (a build interns conversations from messages only).
 */
export function numberByContact(
  global: Uint32Array,
  msgContact: Uint32Array,
  count: number,
  contactCount: number,
): ContactNumbering | null {
  const n = global.length;
  if (msgContact.length !== n) return null;
  const owner = new Uint32Array(count).fill(UNSEEN);
  const number = new Uint32Array(count);
  const per = new Uint32Array(contactCount);
  for (let o = 0; o < n; o++) {
    const g = global[o],
      c = msgContact[o];
    if (g >= count || c >= contactCount) return null;
    if (owner[g] === UNSEEN) {
      owner[g] = c;
      number[g] = per[c]++;
    } else if (owner[g] !== c) return null;
  }
  const start = new Uint32Array(contactCount + 1);
  let most = 0;
  for (let c = 0; c < contactCount; c++) {
    start[c + 1] = start[c] + per[c];
    if (per[c] > most) most = per[c];
  }
  if (start[contactCount] !== count) return null;
  const ordinal = new Uint32Array(count);
  for (let g = 0; g < count; g++) ordinal[g] = start[owner[g]] + number[g];
  return { start, most, ordinal, number };
}

/**
 * Whether stored numbers have their shape: contactCount + 1 starts from 0 up to `count`, never
 * down, and every message's number below the most conversations of one contact. (A number past
 * its own contact's count is not caught without the messages' contacts, which a server does not
 * load; the snapshot's CRCs stand for the rest, as for the postings.)
 */
export function conversationsFit(
  local: ConversationColumn,
  start: Uint32Array,
  messages: number,
  count: number,
  contactCount: number,
): boolean {
  if (local.length !== messages || start.length !== contactCount + 1 || start[0] !== 0) return false;
  if (start[contactCount] !== count) return false;
  let most = 0;
  for (let c = 0; c < contactCount; c++) {
    if (start[c + 1] < start[c]) return false;
    if (start[c + 1] - start[c] > most) most = start[c + 1] - start[c];
  }
  if (narrowColumnType(most) !== (local instanceof Uint16Array ? 'Uint16Array' : 'Uint32Array')) return false;
  for (let o = 0; o < messages; o++) if (local[o] >= most) return false;
  return true;
}
