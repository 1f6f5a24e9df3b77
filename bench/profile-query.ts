/**
 * Profiling aid (not part of `npm run bench`): builds a generated organization and runs one query
 * class in a loop, so `node --cpu-prof --import tsx bench/profile-query.ts --q 'q=que'` shows
 * where a request's search and rendering time goes (`--q 'q=a|q=b'` runs several round robin).
 */
import { generateRecords } from '../scripts/gen-lib.js';
import { buildIndex } from '../src/index/build.js';
import { OrgDataBuilder } from '../src/model/org-data-builder.js';
import { searchBody } from '../src/query/execute.js';
import { parseSearchParams } from '../src/request/parse-params.js';
import { parseRfc3339 } from '../src/time/rfc3339.js';
import { flagNumber, flagString } from './helpers.js';

const messages = flagNumber('messages', 1_000_000);
const seconds = flagNumber('seconds', 5);
const query = flagString('q', 'q=que');
let builder: OrgDataBuilder | null = null;
for (const r of generateRecords({ messages, contacts: flagNumber('contacts', 20_000), organizations: 1, seed: 42 })) {
  if (r.kind === 'contact') (builder ??= new OrgDataBuilder(r.contact.organization_id)).addContact(r.contact);
  else builder!.addMessage(r.message, parseRfc3339(r.message.sent_at)!);
}
const data = builder!.build();
const index = buildIndex(data);
// several queries separated by '|' run round robin, as a mix
const requests = query.split('|').map((q) => {
  const parsed = parseSearchParams(`organization_id=${data.organizationId}&${q}`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.details));
  return parsed.request;
});
const end = performance.now() + seconds * 1000;
let n = 0;
while (performance.now() < end) {
  searchBody(index, requests[n % requests.length]);
  n++;
}
console.log(`${query}: ${n} runs, ${((seconds * 1e6) / n).toFixed(1)} µs each`);
