import type { OrgIndex } from '../index/build.js';
import type { SearchRequest, SearchResponse } from './search-request.js';

/** Answers one search; a null index (organization without a snapshot) gives an empty page. */
export function executeSearch(index: OrgIndex | null, req: SearchRequest): SearchResponse {
  throw new Error('query: not implemented yet ' + String(index) + req.organizationId);
}
