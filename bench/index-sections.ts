/** Bytes a message of every section of the newest snapshot in DATA_DIR (argv[2]); run: node --import tsx bench/index-sections.ts DIR */
import { contentBytesOf, type RowStarts, rowOffsetsOf } from '../src/index/message-rows.js';
import { EmbeddedStore } from '../src/store/embedded-store.js';
const store = await new EmbeddedStore(process.argv[2]).open();
const [ref] = await store.snapshots.latest();
const t0 = performance.now();
const flat = await store.snapshots.loadFlatIndex(ref);
const t1 = performance.now();
const n = flat.messageCount;
let total = 0,
  text = 0;
const rows: [string, number][] = [];
for (const [k, a] of Object.entries(flat.sections)) {
  rows.push([k, a.byteLength]);
  total += a.byteLength;
}
rows.sort((a, b) => b[1] - a[1]);
// the text: the contents in the message rows (their ids and length prefixes are index)
text = contentBytesOf(
  flat.sections.msgRowBytes as Uint8Array,
  rowOffsetsOf(flat.sections as unknown as RowStarts, flat.messageCount),
);
for (const [k, b] of rows) console.log(`| ${k} | ${(b / 2 ** 20).toFixed(1)} | ${(b / n).toFixed(1)} |`);
console.log(`| total sections | ${(total / 2 ** 20).toFixed(1)} | ${(total / n).toFixed(1)} |`);
console.log(
  `| beyond the text (total - the contents in msgRowBytes) | ${((total - text) / 2 ** 20).toFixed(1)} | ${((total - text) / n).toFixed(1)} |`,
);
console.log(
  `messages ${n}, contacts ${flat.contactCount}, tokens ${flat.sections.tokenOffsets.length - 1}, pairs ${flat.sections.pairKeys.length}; read+verify ${(t1 - t0).toFixed(0)} ms`,
);
await store.close();
