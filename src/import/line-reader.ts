/** Streams an NDJSON file line by line, never holding more than readline's buffer. */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

export interface Line {
  /** 1-based, counting blank lines too, as an editor shows them */
  number: number;
  text: string;
}

/**
 * Yields the non-blank lines of `file`: a UTF-8 BOM is dropped, CRLF and LF both end a line.
 * `onBytes` receives the byte count of every block read, for progress.
 */
export async function* readLines(file: string, onBytes?: (n: number) => void): AsyncGenerator<Line> {
  const stream = createReadStream(file, { highWaterMark: 1 << 20 });
  if (onBytes) stream.on('data', (chunk) => onBytes(chunk.length));
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let number = 0;
  try {
    for await (let text of rl) {
      number++;
      if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0 || (isSpace(text.charCodeAt(0)) && text.trim() === '')) continue;
      yield { number, text };
    }
  } finally {
    rl.close();
    stream.destroy();
  }
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 0xa0 || c === 0xfeff || c > 0x1000;
}
