/**
 * The walk of one page contact: its counting messages newest first, for match_count,
 * conversations_count, first and last matched_at and the first few messages. One term reads its
 * list (or its summary), two or three without a phrase merge with a cursor each, and any other
 * several read each term's list in turn, a message counted once (walkUnion).
 */
import { summaryAt } from '../index/entry-summaries.js';
import { COMBO_BITS, HEAD_INLINE, NONE } from '../index/layout.js';
import { postingsLowerBound } from '../index/lower-bound.js';
import type { OrgIndex } from '../index/org-index.js';
import { postStartIn } from '../index/post-starts.js';
import type { Plan } from './plan.js';
import type { Scratch } from './scratch.js';
import { holdsPhrase, positionOf } from './term-view.js';

/** Ordinals of the contact's counting messages: count, conversations, newest, oldest, and the first few. */
export interface Walk {
  count: number;
  conversations: number;
  newest: number;
  oldest: number;
  picked: number;
}

/**
 * Starts the count of one contact's conversations: every conversationStamp entry reads as not
 * counted (conversations are numbered within their contact, so each contact's walk needs its own).
 */
function nextConversationGeneration(s: Scratch): void {
  if (++s.conversationGeneration === 0xffffffff) {
    s.conversationGeneration = 1;
    s.conversationStamp.fill(0);
  }
}

/** Records counting message o (newest first) into the walk. */
function counted(index: OrgIndex, s: Scratch, w: Walk, o: number, messagesLimit: number): void {
  w.count++;
  if (w.newest < 0) w.newest = o;
  w.oldest = o;
  const conv = index.msgConversation[o];
  if (s.conversationStamp[conv] !== s.conversationGeneration) {
    s.conversationStamp[conv] = s.conversationGeneration;
    w.conversations++;
  }
  if (w.picked < messagesLimit) s.picked[w.picked++] = o;
}

/**
 * Walks one matching contact's counting messages, newest first: a merge over every term. `entry`,
 * when >= 0, is the contact's entry of term `term` (a top-list page knows it): no search for it.
 */
export function walkContact(
  plan: Plan,
  s: Scratch,
  c: number,
  messagesLimit: number,
  w: Walk,
  entry: number,
  term: number,
): void {
  const { index, views } = plan;
  const k = views.length;
  const { storedPostings: postings, msgCombo } = index;
  const { mask, hi } = plan;
  w.count = w.conversations = w.picked = 0;
  w.newest = w.oldest = -1;
  nextConversationGeneration(s);
  const { pos, end } = s;
  if (k === 1) {
    // one term: its list for this contact, no merge
    const v = views[0];
    const g = termRange(plan, s, 0, c, entry, term);
    const phrase = v.phrase;
    const last = end[0];
    let p = pos[0];
    const head = s.head[0];
    // (precomputed: no date window, so the head (if inline) and p are all the entry's messages)
    if (
      plan.precomputed &&
      v.entry === null &&
      phrase === null &&
      last - p + (head !== NONE ? 1 : 0) >= index.summaryMin[0]
    ) {
      const at = summaryAt(index, g);
      if (at >= 0) {
        walkSummarized(plan, s, head, p, last, messagesLimit, w, at);
        return;
      }
    }
    if (head !== NONE) {
      if (head >= hi) return;
      if (((1 << msgCombo[head]) & mask) !== 0 && (phrase === null || holdsPhrase(plan, v, s.at[0], head)))
        counted(index, s, w, head, messagesLimit);
    }
    for (; p < last; p++) {
      const o = postings[p];
      if (o >= hi) break;
      if (((1 << msgCombo[o]) & mask) === 0 || (phrase !== null && !holdsPhrase(plan, v, s.at[0], o))) continue;
      counted(index, s, w, o, messagesLimit);
    }
    return;
  }
  if (k <= FEW_TERMS && withoutPhrase(views)) {
    for (let j = 0; j < k; j++) termRange(plan, s, j, c, entry, term);
    walkFew(plan, s, messagesLimit, w, k);
    return;
  }
  walkUnion(plan, s, c, messagesLimit, w, entry, term);
}

/**
 * walkContact's merge for two or three terms without a phrase (s.head / s.pos / s.end set by
 * termRange; for two, s.head[2] and s.pos[2] are stale and not read): a cursor a term in locals,
 * holding the term's next message (its head, then its stored postings), a message in several
 * lists counted once. A k-way loop over the terms, and a gathering and sorting of the postings,
 * each cost more than the postings they read: measured on pages of 50 (search plus rendering),
 * 2 terms all 54.7 -> 45 µs, 3 terms any 60.9 -> 50.7, 3 terms all 101 -> 80. walkUnion, which
 * takes the other cases, measured 4-12% slower than this for two and three plain terms
 * (bench/RESULTS.md, session 22).
 */
function walkFew(plan: Plan, s: Scratch, messagesLimit: number, w: Walk, k: number): void {
  const { index, mask, hi } = plan;
  const { storedPostings: postings, msgCombo } = index;
  let p0 = s.pos[0],
    p1 = s.pos[1],
    p2 = s.pos[2];
  const e0 = s.end[0],
    e1 = s.end[1],
    e2 = k === 3 ? s.end[2] : 0;
  // each term's next message (NONE when done): its head, then its stored postings
  const heads = s.head;
  let a = heads[0] !== NONE ? heads[0] : p0 < e0 ? postings[p0++] : NONE;
  let b = heads[1] !== NONE ? heads[1] : p1 < e1 ? postings[p1++] : NONE;
  if (k === 2) {
    // its own loop: the third cursor's tests cost two terms 7% (44.0 -> 47.1 µs a page)
    for (;;) {
      const o = a < b ? a : b;
      // NONE when every list is done: hi is at most the message count, below NONE
      if (o >= hi) return;
      if (a === o) a = p0 < e0 ? postings[p0++] : NONE;
      if (b === o) b = p1 < e1 ? postings[p1++] : NONE;
      if (((1 << msgCombo[o]) & mask) !== 0) counted(index, s, w, o, messagesLimit);
    }
  }
  let c = heads[2] !== NONE ? heads[2] : p2 < e2 ? postings[p2++] : NONE;
  for (;;) {
    const o = a < b ? (a < c ? a : c) : b < c ? b : c;
    if (o >= hi) return;
    if (a === o) a = p0 < e0 ? postings[p0++] : NONE;
    if (b === o) b = p1 < e1 ? postings[p1++] : NONE;
    if (c === o) c = p2 < e2 ? postings[p2++] : NONE;
    if (((1 << msgCombo[o]) & mask) !== 0) counted(index, s, w, o, messagesLimit);
  }
}

/**
 * Sets s.pos[j] .. s.end[j] to contact c's postings of term j from the date window's start on
 * (empty when the contact lacks the term); returns its entry, or -1. `entry`, when >= 0, is its
 * entry of term `term` (a top-list page knows it): no search for it.
 */
function termRange(plan: Plan, s: Scratch, j: number, c: number, entry: number, term: number): number {
  const { index } = plan;
  const v = plan.views[j];
  const e = j === term && entry >= 0 && v.entry === null ? entry : positionOf(v, c);
  s.at[j] = e;
  if (e < 0) {
    s.pos[j] = s.end[j] = 0;
    s.head[j] = NONE;
    return -1;
  }
  const g = v.entry === null ? e : v.entry[e];
  const { entryPostBase: bases, entryNewestIn: words, entryPostFar: far } = index;
  const end = postStartIn(bases, words, far, plan.postShift, g + 1);
  const start = postStartIn(bases, words, far, plan.postShift, g);
  s.end[j] = end;
  s.pos[j] = plan.lo > 0 ? postingsLowerBound(index.storedPostings, start, end, plan.lo) : start;
  // the inline head (the newest), unless the window starts after it
  const head = (index.entryFlags[g] & HEAD_INLINE) !== 0 ? words[g] & plan.headField : NONE;
  s.head[j] = head !== NONE && head >= plan.lo ? head : NONE;
  return g;
}

/**
 * walkContact for one plain token without date or channel filter, on an entry with a summary
 * (entry-summaries.ts, values from `at`): the counts and the oldest come from it, and only the
 * postings up to the last picked message (or the newest, when none is picked) are read.
 */
function walkSummarized(
  plan: Plan,
  s: Scratch,
  head: number,
  start: number,
  end: number,
  messagesLimit: number,
  w: Walk,
  at: number,
): void {
  const { index, mask } = plan;
  const { storedPostings: postings, msgCombo, summaryValues } = index;
  const v = at + plan.direction * 3;
  w.count = summaryValues[v];
  w.conversations = summaryValues[v + 1];
  w.oldest = summaryValues[v + 2];
  if (head !== NONE && ((1 << msgCombo[head]) & mask) !== 0) {
    w.newest = head;
    if (messagesLimit === 0) return;
    s.picked[w.picked++] = head;
  }
  for (let p = start; p < end; p++) {
    const o = postings[p];
    if (((1 << msgCombo[o]) & mask) === 0) continue;
    if (w.newest < 0) w.newest = o;
    if (w.picked >= messagesLimit) return;
    s.picked[w.picked++] = o;
  }
}

/** No view is a phrase (walkFew reads no token sequence). */
function withoutPhrase(views: readonly { phrase: unknown }[]): boolean {
  for (let j = 0; j < views.length; j++) if (views[j].phrase !== null) return false;
  return true;
}

/** Up to this many terms without a phrase, walkFew merges a contact's lists with a cursor each in locals. */
const FEW_TERMS = 3;

/** Makes room in s.gather (and s.convs, as long) for `need` ordinals, keeping the first `keep`. */
function gatherRoom(s: Scratch, keep: number, need: number): void {
  if (need <= s.gather.length) return;
  const grown = new Uint32Array(Math.max(2 * s.gather.length, need));
  grown.set(s.gather.subarray(0, keep));
  s.gather = grown;
  s.convs = new Uint32Array(grown.length);
}

/**
 * walkContact for several terms, one a phrase or more than three. A message counts once
 * whatever terms it holds, and its counts need no order: the terms' lists are read one after the
 * other, a message seen under an earlier term dropped by its bit in s.messageBits, and only the
 * first few messages (the page's picks) are merged in order. The walk it replaced put every
 * posting in order first (a merge of k runs, then a branch on every ordinal, each waiting for its
 * columns): on the largest page of 10 common terms ~18 µs a contact of its ~176 postings, 21.8%
 * more time a request than this; with a phrase among the terms the two were equal within 2-8%.
 * The plain terms' passes keep each loop free of branches on loaded values, so the CPU overlaps
 * the scattered reads of msgCombo and msgConversation instead of waiting for each in turn.
 */
function walkUnion(
  plan: Plan,
  s: Scratch,
  c: number,
  messagesLimit: number,
  w: Walk,
  entry: number,
  term: number,
): void {
  const { index, views, mask, hi } = plan;
  const { storedPostings: postings, msgCombo, msgConversation } = index;
  const words = (index.messageCount + 31) >>> 5;
  if (s.messageBits.length < words) s.messageBits = new Int32Array(words);
  const bits = s.messageBits;
  const runs = s.runs;
  // 1. each term's messages in the window, those seen under an earlier term left out: one
  // ascending run a term in s.gather (a bit set for every message kept, cleared in 2)
  let n = 0;
  let runCount = 0;
  const k = views.length;
  // plain terms first, phrases last: a message a plain term already kept costs a phrase no test
  // (phrase first, q=o com&keywords=que,para took 4% longer than the sorting walk it replaced)
  for (let i = 0; i < 2 * k; i++) {
    const j = i < k ? i : i - k;
    if ((views[j].phrase === null) !== i < k) continue;
    if (termRange(plan, s, j, c, entry, term) < 0) continue;
    let p = s.pos[j];
    const end = s.end[j];
    gatherRoom(s, n, n + end - p + 1);
    const gather = s.gather;
    runs[runCount++] = n;
    const head = s.head[j];
    // the head (the newest), then the stored postings; NONE is above hi, which ends the run
    let o = head !== NONE ? head : p < end ? postings[p++] : NONE;
    const phrase = views[j].phrase;
    if (phrase === null) {
      while (o < hi) {
        const at = o >>> 5;
        const was = bits[at];
        // (a shift count is taken modulo 32: bit o & 31 of the word)
        bits[at] = was | (1 << o);
        gather[n] = o;
        n += ((was >>> o) & 1) ^ 1;
        o = p < end ? postings[p++] : NONE;
      }
      continue;
    }
    // a phrase: only the messages that hold it, not yet seen, and of a combo that counts (the
    // costly test last); one that does not hold it stays unseen, for a later term to keep
    while (o < hi) {
      const at = o >>> 5;
      if (
        (bits[at] & (1 << o)) === 0 &&
        ((mask >>> msgCombo[o]) & 1) !== 0 &&
        holdsPhrase(plan, views[j], s.at[j], o)
      ) {
        bits[at] |= 1 << o;
        gather[n++] = o;
      }
      o = p < end ? postings[p++] : NONE;
    }
  }
  runs[runCount] = n;
  // 2. the bits cleared, and the messages of a combo the filter refuses dropped (a combo is the
  // message's own, whatever term found it); each run stays in order, in [runPos[r], runEnd[r])
  const gather = s.gather;
  const { runPos, runEnd } = s;
  let m = 0;
  if (mask === COMBO_BITS) {
    // every direction and channel counts (direction=all, no channel): no combo to read, a
    // scattered read a message (the largest page of ten terms: 17.6k of them)
    for (let r = 0; r < runCount; r++) {
      runPos[r] = runs[r];
      runEnd[r] = runs[r + 1];
    }
    for (let i = 0; i < n; i++) bits[gather[i] >>> 5] = 0;
    m = n;
  } else {
    for (let r = 0; r < runCount; r++) {
      runPos[r] = m;
      for (let i = runs[r], to = runs[r + 1]; i < to; i++) {
        const o = gather[i];
        bits[o >>> 5] = 0;
        gather[m] = o;
        // bit msgCombo[o] of the mask (its TIED bit, 128, is a multiple of 32: no effect)
        m += (mask >>> msgCombo[o]) & 1;
      }
      runEnd[r] = m;
    }
  }
  w.count = m;
  if (m === 0) return;
  // 3. conversations: their ids read first (independent reads), then counted once each
  const convs = s.convs;
  for (let i = 0; i < m; i++) convs[i] = msgConversation[gather[i]];
  const stamp = s.conversationStamp;
  const gen = s.conversationGeneration;
  let conversations = 0;
  for (let i = 0; i < m; i++) {
    const cv = convs[i];
    if (stamp[cv] !== gen) {
      stamp[cv] = gen;
      conversations++;
    }
  }
  w.conversations = conversations;
  // 4. the oldest: the largest run end; the newest and the picks: the runs merged up to the picks
  let oldest = 0;
  for (let r = 0; r < runCount; r++)
    if (runEnd[r] > runPos[r] && gather[runEnd[r] - 1] > oldest) oldest = gather[runEnd[r] - 1];
  w.oldest = oldest;
  for (;;) {
    // (each message is in one run only: no ties)
    let best = NONE;
    let from = -1;
    for (let r = 0; r < runCount; r++) {
      const q = runPos[r];
      if (q < runEnd[r] && gather[q] < best) {
        best = gather[q];
        from = r;
      }
    }
    if (w.newest < 0) w.newest = best;
    if (w.picked >= messagesLimit) return;
    s.picked[w.picked++] = best;
    runPos[from]++;
    if (w.picked === m) return;
  }
}
