/**
 * The frequent tokens' channel bitmaps (src/index/channel-bits.ts) against their definition read
 * from the messages themselves: bit i of channel c's bitmap of a slot's token is set exactly when
 * the token's entry i (a contact) has an inbound message on channel c, and the bits past the
 * last entry are clear. Whole answers under the channel filters are the property test's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateDataset } from '../../../scripts/gen-lib.js';
import { buildIndex } from '../../../src/index/build.js';
import { channelWords } from '../../../src/index/channel-bits.js';
import { CHANNEL_COUNT, COMBO_VALUE, entryOrdinals } from '../../../src/index/layout.js';
import type { OrgIndex } from '../../../src/index/org-index.js';
import { OrgDataBuilder } from '../../../src/model/org-data-builder.js';
import { parseRfc3339 } from '../../../src/time/rfc3339.js';

function generatedIndex(messages: number, contacts: number, minEntries: number): OrgIndex {
  const data = generateDataset({ messages, contacts, organizations: 1, seed: 31 });
  const b = new OrgDataBuilder(data.contacts[0].organization_id);
  for (const c of data.contacts) b.addContact(c);
  for (const m of data.messages) b.addMessage(m, parseRfc3339(m.sent_at)!);
  return buildIndex(b.build(), { topLists: { minEntries, length: 8 } });
}

/** Checks every slot's bitmaps bit by bit; returns how many slots and set bits it saw. */
function checkBitmaps(x: OrgIndex): { slots: number; set: number } {
  let slots = 0,
    set = 0;
  for (let t = 0; t < x.topSlot.length; t++) {
    const s = x.topSlot[t];
    if (s < 0) continue;
    slots++;
    const from = x.entryStart[t],
      to = x.entryStart[t + 1];
    const words = channelWords(to - from);
    const start = x.inboundChannelStart[s];
    assert.equal(x.inboundChannelStart[s + 1] - start, CHANNEL_COUNT * words, `slot ${s}'s size`);
    for (let c = 0; c < CHANNEL_COUNT; c++) {
      for (let i = 0; i < words * 32; i++) {
        const bit = (x.inboundChannelBits[start + c * words + (i >>> 5)] >>> (i & 31)) & 1;
        // inbound combo of channel c is c (layout.ts); direction and channel read from the messages
        const want =
          from + i < to && entryOrdinals(x, from + i).some((o) => (x.msgCombo[o] & COMBO_VALUE) === c) ? 1 : 0;
        assert.equal(bit, want, `token ${t} entry ${i} channel ${c}`);
        set += bit;
      }
    }
  }
  return { slots, set };
}

describe('channel bitmaps', () => {
  it('of every token with a slot, bit for bit from the messages', () => {
    // a slot from max(1, 70 / 16) = 5 entries on: hundreds of tokens
    const x = generatedIndex(3000, 70, 1);
    const { slots, set } = checkBitmaps(x);
    assert.ok(slots > 100, `${slots} slots`);
    assert.ok(set > 1000, `${set} bits set`);
  });

  it('of the frequent tokens only, with the default threshold', () => {
    // 2,000 contacts: tokens with >= 1,024 entries get slots, the rest none
    const x = generatedIndex(40000, 2000, 1024);
    const { slots } = checkBitmaps(x);
    assert.ok(slots > 0 && slots < x.entryStart.length - 1, `${slots} slots`);
    assert.equal(x.inboundChannelStart.length, slots + 1);
    assert.equal(x.inboundChannelStart[slots], x.inboundChannelBits.length);
  });
});
