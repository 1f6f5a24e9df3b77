/**
 * Profiling aid (not part of `npm run bench`): builds a generated organization and runs one query
 * class in a loop, so `node --cpu-prof --import tsx bench/profile-query.ts --q 'q=que'` shows
 * where a request's search and rendering time goes (`--q 'q=a|q=b'` runs several round robin).
 *
 * `--cold common|all2|any3|filtered` runs 300 different queries of that class round robin
 * instead, built from the 400 most frequent words: each request then finds little of its index
 * in the cache, as a served one does (the same query repeated, as tinybench runs it, finds all).
 */
import { generateRecords } from '../scripts/gen-lib.js';
import { buildIndex } from '../src/index/build.js';
import { tokenFrequency } from '../src/index/org-index.js';
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
/** 300 queries of class `cold` over the frequent words (see the top). */
function coldQueries(cold: string): string[] {
  const words = [...(index.tokenIds as Map<string, number>)]
    .filter(([t]) => t.length >= 3 && !/^\d+$/.test(t))
    .map(([t, id]) => ({ t: encodeURIComponent(t), df: tokenFrequency(index, id) }))
    .sort((a, b) => b.df - a.df)
    .slice(0, 400)
    .map((x) => x.t);
  const out: string[] = [];
  for (let i = 0; i < 300; i++) {
    const a = words[i % words.length],
      b = words[(i * 7 + 3) % words.length],
      c = words[(i * 13 + 5) % words.length];
    if (cold === 'common') out.push(`q=${a}`);
    else if (cold === 'all2') out.push(`keywords=${a},${b}&match=all`);
    else if (cold === 'any3') out.push(`keywords=${a},${b},${c}`);
    else if (cold === 'filtered') out.push(`q=${a}&channel=whatsapp&from=2024-04-18&to=2024-09-09`);
    else throw new Error(`profile-query: --cold takes common, all2, any3 or filtered, got ${JSON.stringify(cold)}`);
  }
  return out;
}
const cold = flagString('cold', '');
// several queries separated by '|' run round robin, as a mix
const requests = (cold === '' ? query.split('|') : coldQueries(cold)).map((q) => {
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
console.log(`${cold === '' ? query : `--cold ${cold}`}: ${n} runs, ${((seconds * 1e6) / n).toFixed(1)} µs each`);
