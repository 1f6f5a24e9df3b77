/**
 * For each frequent token (a top-list slot, top-lists.ts), one bitmap over its entries per
 * channel: bit i of channel c's bitmap is set when entry entryStart[t] + i has an inbound message
 * on c. A query of one plain token filtered to one channel, inbound (the default direction), then
 * visits only the entries with such a message, 32 entries a word read, instead of testing every
 * entry's flags: 81% of a common word's entries lack one channel's inbound combo, and testing them
 * was a third of the channel + date class (q=por, whatsapp, a date window: 12,205 entries).
 *
 * Slot s's bitmaps: inboundChannelBits[inboundChannelStart[s] + c * W ..][0 .. W), W = the slot
 * token's entries / 32 rounded up: CHANNEL_COUNT bits an entry of a frequent token (2.2 MiB at 1M).
 */
import { CHANNEL_COUNT } from './layout.js';

export interface ChannelBits {
  readonly inboundChannelBits: Int32Array;
  /** where each slot's bitmaps start; one more than the slots, the last the bits' length */
  readonly inboundChannelStart: Uint32Array;
}

export const CHANNEL_BITS_SECTIONS = ['inboundChannelBits', 'inboundChannelStart'] as const;

/** Words of one bitmap over `entries` entries. */
export function channelWords(entries: number): number {
  return (entries + 31) >>> 5;
}

/** Where each slot's bitmaps start, from the slots' token sizes (see ChannelBits). */
function slotStarts(entryStart: Uint32Array, topSlot: Int32Array, slots: number): Uint32Array {
  const start = new Uint32Array(slots + 1);
  for (let t = 0; t < topSlot.length; t++) {
    const s = topSlot[t];
    if (s >= 0) start[s + 1] = CHANNEL_COUNT * channelWords(entryStart[t + 1] - entryStart[t]);
  }
  for (let s = 0; s < slots; s++) start[s + 1] += start[s];
  return start;
}

/** The bitmaps of every top-list slot (`slots` of them, numbered by topSlot) from the entry flags. */
export function buildChannelBits(
  entryStart: Uint32Array,
  entryFlags: Uint16Array,
  topSlot: Int32Array,
  slots: number,
): ChannelBits {
  const inboundChannelStart = slotStarts(entryStart, topSlot, slots);
  const inboundChannelBits = new Int32Array(inboundChannelStart[slots]);
  for (let t = 0; t < topSlot.length; t++) {
    const s = topSlot[t];
    if (s < 0) continue;
    const from = entryStart[t],
      to = entryStart[t + 1];
    const words = channelWords(to - from);
    const base = inboundChannelStart[s];
    // a word of 32 entries a channel, its bits gathered without a branch (the flags' low
    // CHANNEL_COUNT bits are the inbound combos, channel c at bit c: layout.ts)
    for (let w = 0; w < words; w++) {
      const at = from + (w << 5),
        n = Math.min(32, to - at);
      for (let c = 0; c < CHANNEL_COUNT; c++) {
        let word = 0;
        for (let i = 0; i < n; i++) word |= ((entryFlags[at + i] >>> c) & 1) << i;
        inboundChannelBits[base + c * words + w] = word;
      }
    }
  }
  return { inboundChannelBits, inboundChannelStart };
}

/**
 * Whether loaded bitmaps have the shape the slots give them (a query reads them without checks:
 * a start past the bits would read undefined words). Their bits are the CRC-checked snapshot's.
 */
export function channelBitsFit(x: ChannelBits, entryStart: Uint32Array, topSlot: Int32Array, slots: number): boolean {
  const want = slotStarts(entryStart, topSlot, slots);
  const start = x.inboundChannelStart;
  if (start.length !== want.length || want[slots] !== x.inboundChannelBits.length) return false;
  for (let s = 0; s <= slots; s++) if (start[s] !== want[s]) return false;
  return true;
}
