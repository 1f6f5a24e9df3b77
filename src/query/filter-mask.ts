import { CHANNELS } from '../model/records.js';
import type { SearchRequest } from './search-request.js';

/**
 * A message's (direction, channel) is one bit, direction * 5 + channel; a request's direction
 * and channel filters are the set of bits it accepts. One AND answers both filters.
 */
export function filterMask(req: SearchRequest): number {
  let mask = 0;
  for (let d = 0; d < 2; d++) {
    if (req.direction === 'inbound' && d !== 0) continue;
    if (req.direction === 'outbound' && d !== 1) continue;
    for (let c = 0; c < CHANNELS.length; c++) {
      if (req.channel !== null && CHANNELS[c] !== req.channel) continue;
      mask |= 1 << (d * CHANNELS.length + c);
    }
  }
  return mask;
}
