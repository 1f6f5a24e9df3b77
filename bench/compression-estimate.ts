/**
 * What delta + varint would save on the two biggest sections of a loaded index (postings and
 * tokenSeq), measured on the newest snapshot in DATA_DIR (argv[2]); it changes nothing.
 * Run: node --import tsx bench/compression-estimate.ts DATA_DIR
 */
import { EmbeddedStore } from '../src/store/embedded-store.js';

const varint = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);
const store = await new EmbeddedStore(process.argv[2]).open();
const [ref] = await store.snapshots.latest();
const flat = await store.snapshots.loadFlatIndex(ref);
await store.close();
const s = flat.sections as Record<string, Uint32Array>;
const n = flat.messageCount;
let post = 0;
for (let e = 0; e + 1 < s.entryPostStart.length; e++) {
  let prev = 0;
  for (let p = s.entryPostStart[e]; p < s.entryPostStart[e + 1]; p++) {
    post += varint(s.postings[p] - prev);
    prev = s.postings[p];
  }
}
let seq = 0;
for (let k = 0; k < s.tokenSeq.length; k++) seq += varint(s.tokenSeq[k]);
const row = (name: string, raw: number, packed: number): string =>
  `| ${name} | ${(raw / n).toFixed(1)} | ${(packed / n).toFixed(1)} | ${((raw - packed) / n).toFixed(1)} |`;
console.log(`messages ${n}\n| section | today B/msg | delta+varint B/msg | saved B/msg |\n|---|---|---|---|`);
console.log(row('postings (delta within an entry)', s.postings.byteLength, post));
console.log(row('tokenSeq (varint token ids)', s.tokenSeq.byteLength, seq));
