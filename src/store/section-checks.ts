/**
 * Whether a loaded snapshot's sections agree with each other and with its counts, beyond what the
 * decoder's own checks (rows, sequences, posting starts, conversations, top lists, sent times,
 * summaries, channel bits) cover. A chunk's CRC proves its bytes are the ones written, not that
 * the writer wrote a consistent index: a review rewrote sections with their CRCs right, and the
 * server took them. An `entryStart` that went down made a query walk ~4·10⁹ entries (every
 * serving thread stuck, reloads of every organization queued behind them), `tokenOffsets` that
 * went down made the dictionary's hash table read ~4 GB (a minute at start, listeners closed),
 * and contact or message numbers past the counts answered 500 or wrong counts. Each check here is
 * one pass over a column (~15 ms at 1M messages), so a bad snapshot fails its load and the
 * previous one stays in service.
 */
import { CHANNEL_COUNT, COMBO_VALUE } from '../index/layout.js';
import type { Section } from './section.js';

type Column = ArrayLike<number>;

const CHECKED = [
  'tokenBytes',
  'tokenOffsets',
  'entryStart',
  'entryContact',
  'entryFlags',
  'keyFrequency',
  'topSlot',
  'tokenRank',
  'storedPostings',
  'msgCombo',
  'contactJsonBytes',
  'contactJsonOffsets',
  'contactIdRank',
  'contactByIdRank',
] as const;

/** Starts at 0, never goes down, ends at `end`. */
function rises(x: Column, end: number): boolean {
  if (x.length < 1 || x[0] !== 0 || x[x.length - 1] !== end) return false;
  for (let i = 1; i < x.length; i++) if (x[i] < x[i - 1]) return false;
  return true;
}

/** Every value below `bound`. */
function below(x: Column, bound: number): boolean {
  for (let i = 0; i < x.length; i++) if (!(x[i] < bound)) return false;
  return true;
}

/**
 * The first way the sections of an organization of `messages` and `contacts` disagree, or null.
 * Reads only sections every layout the loader accepts stores as they are.
 */
export function sectionsDisagree(s: Record<string, Section>, messages: number, contacts: number): string | null {
  // a section missing is for the caller to name (checkWrappable)
  for (const name of CHECKED) if (s[name] === undefined) return null;
  const tokenOffsets = s.tokenOffsets as Column;
  if (!rises(tokenOffsets, s.tokenBytes.length)) return 'the token dictionary offsets go down';
  const vocabulary = tokenOffsets.length - 1;
  const entryStart = s.entryStart as Column;
  const entries = s.entryContact.length;
  if (entryStart.length < vocabulary + 1 || !rises(entryStart, entries))
    return 'the entry starts disagree with the entries';
  const keys = entryStart.length - 1;
  if (s.keyFrequency.length !== keys || s.topSlot.length !== keys || s.tokenRank.length !== vocabulary)
    return 'the per-key sections disagree with the keys';
  if (!below(s.tokenRank as Column, vocabulary)) return 'a token rank is past the vocabulary';
  if (s.entryFlags.length !== entries || !below(s.entryContact as Column, contacts))
    return 'the entries disagree with the contacts';
  if (!below(s.storedPostings as Column, messages)) return 'a posting is past the messages';
  const combo = s.msgCombo as Uint8Array;
  if (combo.length !== messages) return 'the message combos disagree with the messages';
  for (let o = 0; o < messages; o++)
    if ((combo[o] & COMBO_VALUE) >= 2 * CHANNEL_COUNT) return 'a message combo is not a channel and direction';
  if (!rises(s.contactJsonOffsets as Column, s.contactJsonBytes.length) || s.contactJsonOffsets.length !== contacts + 1)
    return 'the contact sections disagree with the contacts';
  const rank = s.contactIdRank as Column,
    byRank = s.contactByIdRank as Column;
  if (rank.length !== contacts || byRank.length !== contacts) return 'the contact ranks disagree with the contacts';
  // inverse permutations of each other: each in range, and each undoes the other
  for (let c = 0; c < contacts; c++) {
    const r = rank[c];
    if (!(r < contacts) || byRank[r] !== c) return 'the contact ranks are not a permutation';
  }
  return null;
}
