/**
 * Entries of many postings put the posting starts in far blocks (src/index/post-starts.ts: a
 * block of entries whose starts span more than the entry words' high bits hold keeps them whole)
 * next to near ones. With 2^17 messages or more the words hold 13 bits of distance (8,191
 * postings), so 20 contacts of ~6,600 messages each, most with the same few words, make a block
 * of one token's entries span ~25k postings; 400 other words make entries of ~16, in near blocks.
 * Every answer is byte for byte the reference's, outbound, filtered and phrase walks included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildIndex } from '../../../src/index/build.js';
import { rankBits } from '../../../src/index/post-starts.js';
import type { MessageLine } from '../../../src/model/records.js';
import { searchBody } from '../../../src/query/execute.js';
import { parseSearchParams } from '../../../src/request/parse-params.js';
import { bareContact, dataOfLines } from '../../helpers/one-contact.js';
import { referenceSearch } from '../../reference/brute-force.js';

const ORG = '0b0e0c0a-0000-4000-8000-000000000004';
const CONTACTS = Array.from({ length: 20 }, (_, i) => `0b0e0c0a-0000-4000-8000-${String(i).padStart(12, '0')}`);
const CHANNELS = ['whatsapp', 'instagram', 'telegram', 'email', 'whatsapp_cloud_api'] as const;
const MESSAGES = 132_000;

describe('an organization whose posting starts go in far blocks', () => {
  const messages: MessageLine[] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const words = ['pedido', i % 3 === 0 ? 'segunda via' : 'via', i % 7 === 0 ? 'boleto' : 'entrega'];
    if (i % 1000 === 17) words.push('raro');
    // 400 words of ~330 messages each: entries of ~16 postings, in near blocks
    words.push(`w${i % 400}`);
    messages.push({
      id: `m${i}`,
      organization_id: ORG,
      contact_id: CONTACTS[(i * 7) % 20],
      conversation_id: `c${i % 37}`,
      channel: CHANNELS[i % 5],
      direction: i % 4 === 0 ? 'outbound' : 'inbound',
      content: words.join(' '),
      // some messages share a time: ties by id
      sent_at: new Date(Date.UTC(2025, 0, 1) - Math.floor(i / 3) * 60_000).toISOString(),
    });
  }
  const contacts = CONTACTS.map((c, i) => bareContact(ORG, c, `Contact ${i}`));
  const index = buildIndex(dataOfLines(ORG, contacts, messages));

  it('has far and near blocks', () => {
    assert.equal(32 - rankBits(MESSAGES), 13);
    const bases = [...index.entryPostBase];
    assert.ok(
      bases.some((b) => b < 0),
      'a far block',
    );
    assert.ok(
      bases.some((b) => b >= 0),
      'a near block',
    );
  });

  it('answers byte for byte as the reference', () => {
    for (const q of [
      'q=pedido&messages_limit=20',
      'q=pedido&direction=all&messages_limit=20&limit=7&offset=5',
      'q=pedido&direction=outbound&messages_limit=20',
      'q=boleto&channel=email&messages_limit=20',
      'q=entrega&channel=telegram&from=2024-12-01&to=2024-12-20&messages_limit=20',
      'q=segunda%20via&direction=all&messages_limit=20',
      'keywords=raro,boleto&match=all&direction=all&messages_limit=20',
      'keywords=raro,boleto,entrega&messages_limit=20',
      'keywords=raro,boleto,entrega,segunda%20via&direction=outbound&messages_limit=20',
      'keywords=w7,pedido&match=all&channel=instagram&messages_limit=20',
      'q=w13&direction=all&messages_limit=20',
    ]) {
      const parsed = parseSearchParams(`organization_id=${ORG}&${q}`);
      assert.ok(parsed.ok, q);
      const want = JSON.stringify(referenceSearch(contacts, messages, parsed.request));
      assert.equal(Buffer.from(searchBody(index, parsed.request)).toString('utf8'), want, q);
    }
  });
});
