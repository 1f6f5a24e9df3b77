/**
 * What delta + varint would save on the stored postings (inline heads are not stored) of a loaded
 * index, measured on the newest
 * snapshot in DATA_DIR (argv[2]); it changes nothing. (The token sequences are varints already:
 * src/index/token-seq.ts.)
 * Run: node --import tsx bench/compression-estimate.ts DATA_DIR
 */
import { type PostStarts, postStart } from '../src/index/post-starts.js';
import { EmbeddedStore } from '../src/store/embedded-store.js';

const varint = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);
const store = await new EmbeddedStore(process.argv[2]).open();
const [ref] = await store.snapshots.latest();
const flat = await store.snapshots.loadFlatIndex(ref);
await store.close();
const s = flat.sections as Record<string, Uint32Array>;
const n = flat.messageCount;
let post = 0;
const starts = { ...(flat.sections as unknown as PostStarts), messageCount: n };
for (let e = 0; e + 1 < starts.entryNewestIn.length; e++) {
  let prev = 0;
  for (let p = postStart(starts, e); p < postStart(starts, e + 1); p++) {
    post += varint(s.storedPostings[p] - prev);
    prev = s.storedPostings[p];
  }
}
const row = (name: string, raw: number, packed: number): string =>
  `| ${name} | ${(raw / n).toFixed(1)} | ${(packed / n).toFixed(1)} | ${((raw - packed) / n).toFixed(1)} |`;
console.log(`messages ${n}\n| section | today B/msg | delta+varint B/msg | saved B/msg |\n|---|---|---|---|`);
console.log(row('postings (delta within an entry)', s.storedPostings.byteLength, post));
const seqBytes = (flat.sections.tokenSeqBytes as Uint8Array).byteLength;
console.log(row('tokenSeqBytes (varint ranks, as stored)', seqBytes, seqBytes));
