import type { OrgIndex } from '../index/org-index.js';
import type { TermView } from './term-view.js';

/**
 * The query's fixed inputs for one execution: searchBody (execute.ts) makes it; the contact match
 * (match.ts), the walks (walk.ts) and the rendering (render.ts) read it.
 */
export interface Plan {
  index: OrgIndex;
  views: TermView[];
  all: boolean;
  mask: number;
  /** ordinal window of the date filter: [lo, hi) */
  lo: number;
  hi: number;
  /** INBOUND, OUTBOUND or BOTH (index/layout.ts) */
  direction: number;
  /** no date and no channel filter: the per-entry newest ranks answer matchContacts */
  precomputed: boolean;
  /**
   * the index's entry words (layout.ts, post-starts.ts), read here once a query: the mask of their
   * rank field, the mask of an inline head's ordinal in it (noInbound - 1), and the shift of the
   * posting start's distance above it (rankBits)
   */
  rankField: number;
  headField: number;
  postShift: number;
}
