/**
 * A flat index through the snapshot format in memory: encoded, its chunks and manifest decoded
 * again as a store's loader would (format 2), for tests that compare answers before and after.
 */
import type { FlatIndex } from '../../src/store/flat-index.js';
import { encodeSnapshot, parseManifest, SnapshotDecoder } from '../../src/store/snapshot-format.js';

export function throughSnapshot(flat: FlatIndex, organizationId: string, version = 1): FlatIndex {
  const enc = encodeSnapshot({ format: 2, flat }, version);
  // the manifest is complete once every chunk is made
  const chunks = [...enc.chunks];
  const decoder = new SnapshotDecoder(parseManifest(enc.manifest(), { organizationId, version }));
  for (const [i, chunk] of chunks.entries()) decoder.add(i, chunk);
  return decoder.finishFlat();
}
