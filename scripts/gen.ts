/**
 * `npm run gen -- --messages N --contacts M --organizations K --seed S [--ids short|uuid] [--times spread|day|one] --out DIR`
 * Writes DIR/contacts.ndjson and DIR/messages.ndjson (CONTRACT 9), streamed with backpressure.
 */
import { once } from 'node:events';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { generateRecords } from './gen-lib.js';

const count = (flag: string, min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, `gen: --${flag} must be a whole number`),
    v.transform(Number),
    v.number(),
    v.minValue(min, `gen: --${flag} must be at least ${min}`),
    v.maxValue(max, `gen: --${flag} must be at most ${max}`),
  );

const ArgsSchema = v.pipe(
  v.object({
    messages: v.optional(count('messages', 0, 200_000_000), '10000'),
    contacts: v.optional(count('contacts', 1, 50_000_000), '1000'),
    organizations: v.optional(count('organizations', 1, 100_000), '1'),
    seed: v.optional(count('seed', 0, 4294967295), '1'),
    ids: v.optional(v.picklist(['short', 'uuid'], 'gen: --ids must be short or uuid'), 'short'),
    times: v.optional(v.picklist(['spread', 'day', 'one'], 'gen: --times must be spread, day or one'), 'spread'),
    out: v.pipe(v.optional(v.string(), ''), v.minLength(1, 'gen: --out DIR is required')),
  }),
  v.check((a) => a.contacts < 1 || a.contacts >= a.organizations, 'gen: --contacts must be at least --organizations'),
);

function fail(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run gen -- --messages N --contacts M --organizations K --seed S [--ids short|uuid] [--times spread|day|one] --out DIR\n`,
  );
  process.exit(2);
}

/** Buffers lines and writes ~1 MiB chunks, awaiting 'drain' when the stream pushes back. */
class ChunkWriter {
  private buf: string[] = [];
  private size = 0;
  constructor(private readonly stream: WriteStream) {}
  /** Queues one line; true when the caller should `await flush()` before continuing. */
  line(s: string): boolean {
    this.buf.push(s);
    this.size += s.length + 1;
    return this.size >= 1 << 20;
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const chunk = this.buf.join('\n') + '\n';
    this.buf = [];
    this.size = 0;
    if (!this.stream.write(chunk)) await once(this.stream, 'drain');
  }
  async close(): Promise<void> {
    await this.flush();
    this.stream.end();
    await once(this.stream, 'finish');
  }
}

async function main(): Promise<void> {
  let raw: Record<string, string | boolean | undefined>;
  try {
    raw = parseArgs({
      args: process.argv.slice(2),
      options: {
        messages: { type: 'string' },
        contacts: { type: 'string' },
        organizations: { type: 'string' },
        seed: { type: 'string' },
        ids: { type: 'string' },
        times: { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (e) {
    fail(`gen: ${(e as Error).message}`);
  }
  if (raw.help) {
    process.stdout.write(
      'usage: npm run gen -- --messages N --contacts M --organizations K --seed S [--ids short|uuid] [--times spread|day|one] --out DIR\n' +
        'Writes DIR/contacts.ndjson and DIR/messages.ndjson: synthetic data in the import format.\n',
    );
    process.exit(0);
  }
  const { help: _help, ...rest } = raw;
  const parsed = v.safeParse(ArgsSchema, rest);
  if (!parsed.success) fail(parsed.issues.map((i) => i.message).join('\n'));
  const opts = parsed.output;

  mkdirSync(opts.out, { recursive: true });
  const contactsPath = join(opts.out, 'contacts.ndjson');
  const messagesPath = join(opts.out, 'messages.ndjson');
  const contacts = new ChunkWriter(createWriteStream(contactsPath));
  const messages = new ChunkWriter(createWriteStream(messagesPath));
  const started = Date.now();
  let nc = 0,
    nm = 0;
  for (const r of generateRecords(opts)) {
    if (r.kind === 'contact') {
      nc++;
      if (contacts.line(JSON.stringify(r.contact))) await contacts.flush();
    } else {
      nm++;
      if (messages.line(JSON.stringify(r.message))) await messages.flush();
    }
  }
  await Promise.all([contacts.close(), messages.close()]);
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `gen: ${nc} contacts, ${nm} messages, ${opts.organizations} organizations, seed ${opts.seed} -> ${contactsPath}, ${messagesPath} in ${secs}s\n`,
  );
}

await main();
