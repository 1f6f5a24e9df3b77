/**
 * Terms a `match=any` query need not search (CONTRACT 3). When term A's tokens occur as a
 * contiguous run of term B's tokens, every message that matches B matches A: under `any` a message
 * counts when it matches at least one term, so dropping B changes no count, no date and no message
 * of the answer (`query.terms` still echoes every term). Under `all` B cannot go (A's messages
 * would still count, but B's own condition holds only through B), nor can A (its messages count).
 *
 * Why: a phrase's candidates are every message holding its rarest key, and each is checked for
 * adjacency. Ten phrases of one frequent word repeated ("o o o", "o o o o", ...) each checked the
 * same ~50k messages at 1M: 40 ms a request, where the shortest phrase alone decides them all.
 */

/** Whether `inner` occurs as a contiguous run of `outer`. */
function containsRun(outer: readonly string[], inner: readonly string[]): boolean {
  const last = outer.length - inner.length;
  next: for (let at = 0; at <= last; at++) {
    for (let k = 0; k < inner.length; k++) if (outer[at + k] !== inner[k]) continue next;
    return true;
  }
  return false;
}

/**
 * For each term's tokens, whether a `match=any` query may skip it: another term's tokens occur in
 * it as a contiguous run, and that term is shorter, or the same tokens and earlier (so of terms
 * with equal tokens the first stays). Containment is transitive, so at least one term is kept,
 * and every skipped term contains a kept one.
 */
export function subsumedTerms(tokens: readonly (readonly string[])[]): boolean[] {
  const out = new Array<boolean>(tokens.length).fill(false);
  for (let i = 0; i < tokens.length; i++) {
    for (let j = 0; j < tokens.length; j++) {
      if (j === i) continue;
      const a = tokens[j],
        b = tokens[i];
      if (a.length === 0 || a.length > b.length || (a.length === b.length && j > i)) continue;
      if (containsRun(b, a)) {
        out[i] = true;
        break;
      }
    }
  }
  return out;
}
