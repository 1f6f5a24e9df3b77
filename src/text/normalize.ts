/** N() of CONTRACT 1: NFKD, drop every Mark, locale-independent lower case. */

const MARKS = /\p{M}/gu;

/** N() before its last step: NFKD with every Mark removed (no context rule here). */
export function foldMarks(s: string): string {
  return s.normalize('NFKD').replace(MARKS, '');
}

/** N(s): run over a whole text at once so context rules (Greek final sigma) apply. */
export function normalize(s: string): string {
  return foldMarks(s).toLowerCase();
}

/** Maximal runs of letters or digits: the token pattern of CONTRACT 1. */
export const TOKEN = /[\p{L}\p{N}]+/gu;
