import type { OrgData } from '../model/records.js';

/** An immutable per-organization index (layout in src/index/). */
export interface OrgIndex {
  readonly organizationId: string;
  readonly messageCount: number;
  readonly contactCount: number;
}

/** Builds the immutable index of one organization. */
export function buildIndex(data: OrgData): OrgIndex {
  throw new Error('index: not implemented yet ' + data.organizationId);
}
