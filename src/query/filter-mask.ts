import { CHANNEL_COUNT, comboOf, INBOUND, OUTBOUND } from '../index/layout.js';
import { CHANNELS } from '../model/records.js';
import type { SearchRequest } from '../request/search-request.js';

/**
 * A message's (direction, channel) is one bit, its combo (index/layout.ts); a request's direction
 * and channel filters are the set of bits it accepts. One AND answers both filters.
 */
export function filterMask(req: SearchRequest): number {
  let mask = 0;
  for (let d = INBOUND; d <= OUTBOUND; d++) {
    if (req.direction === 'inbound' && d !== INBOUND) continue;
    if (req.direction === 'outbound' && d !== OUTBOUND) continue;
    for (let c = 0; c < CHANNEL_COUNT; c++) {
      if (req.channel !== null && CHANNELS[c] !== req.channel) continue;
      mask |= 1 << comboOf(d, c);
    }
  }
  return mask;
}
