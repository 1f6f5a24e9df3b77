/**
 * `npm run snapshot -- import --contacts FILE --messages FILE [--json]` and
 * `npm run snapshot -- list [--json]`. Exit codes: 0 done, 1 import or store error, 2 bad usage,
 * 130 / 143 interrupted by SIGINT / SIGTERM.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { ImportError } from '../import/import-error.js';
import { type ImportData, publishImport, readImport } from '../import/importer.js';
import { createProgress, type Progress } from '../import/progress.js';
import { ConfigError, loadStoreConfig } from '../config/config.js';
import { openStores } from '../store/open-store.js';
import { visibleText } from '../text/visible.js';
import { newDataDirNote, parseOptions, UsageError } from './args.js';
import { endQuietlyOnClosedOutput } from './closed-stdout.js';

const USAGE = `Usage: npm run snapshot -- <command> [options]

Commands:
  import --contacts FILE --messages FILE [--json]
      Validate two NDJSON exports (one JSON object a line) and publish one new snapshot per
      organization found in them; organizations absent from the files are untouched.
      All or nothing: one bad line publishes nothing and names the file, line and field.
      --json prints a summary object on stdout.
  list [--json]
      Show the newest snapshot version of every organization.

Options:
  -h, --help   show this text

Environment: REDIS_URL (set: Redis; unset: files under DATA_DIR, default ./data).
Exit codes: 0 done, 1 import or store error, 2 bad usage, 130 / 143 interrupted
(SIGINT / SIGTERM: nothing is published, and what was written is removed).
`;

function args(argv: string[]) {
  return parseOptions(
    {
      args: argv,
      allowPositionals: true,
      options: {
        contacts: { type: 'string' },
        messages: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    ['contacts', 'messages'],
  );
}

/**
 * The path of an import file, checked before anything is read: it exists, is readable and is a
 * regular file. The readers split a file into byte ranges by its size and read them on two
 * threads; a pipe or a device has no size (a pipe read that way published every organization
 * with no messages), and a directory cannot be read at all.
 */
async function readable(flag: string, file: string | undefined): Promise<string> {
  if (file === undefined || file === '') throw new UsageError(`missing --${flag} FILE`);
  const shown = JSON.stringify(file);
  try {
    await access(file, constants.R_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unknown error');
    throw new UsageError(`--${flag}: cannot read ${shown} (${why})`);
  }
  const info = await stat(file);
  if (info.isDirectory()) throw new UsageError(`--${flag}: ${shown} is a directory, not an NDJSON file`);
  if (!info.isFile()) {
    throw new UsageError(
      `--${flag}: ${shown} is not a regular file (a pipe, socket or device); save the export to a file and pass its path`,
    );
  }
  return file;
}

/** The shell's exit code for a process ended by `signal` (128 + its number). */
const exitCodeOf = (signal: NodeJS.Signals): number => (signal === 'SIGINT' ? 130 : 143);

/** An import stopped by SIGINT or SIGTERM once its staged snapshots were removed. */
class Interrupted extends Error {
  readonly exitCode: number;
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted (${signal})`);
    this.exitCode = exitCodeOf(signal);
  }
}

type ImportPhase = 'reading' | 'staging' | 'publishing';

/**
 * SIGINT / SIGTERM during an import. Reading writes nothing to the store: the import ends at once.
 * Staging is stopped after the organization being written (a build is one synchronous step), and
 * what was staged is removed before the exit, instead of waiting for the next import of those
 * organizations (a 10M-message snapshot is ~2 GB of Redis memory). Once the pointer moves began
 * they all run, whatever comes: stopping among them would publish part of the import. Otherwise
 * a second signal quits at once.
 */
function interruptible(progress: Progress) {
  const controller = new AbortController();
  let phase: ImportPhase = 'reading';
  const onSignal = (signal: NodeJS.Signals): void => {
    progress.stop();
    const code = exitCodeOf(signal);
    if (phase === 'reading') {
      process.stderr.write(`snapshot: interrupted (${signal}) while reading the files: nothing was written\n`);
      process.exit(code);
    }
    if (phase === 'publishing') {
      // however many signals: quitting among the pointer moves would publish part of the import
      process.stderr.write(`snapshot: ${signal}: publishing has begun (a few small writes); letting it finish\n`);
      return;
    }
    if (controller.signal.aborted) {
      process.stderr.write(
        `snapshot: ${signal} again: quitting now; nothing is published, and the next import of these organizations removes what was staged\n`,
      );
      process.exit(code);
    }
    process.stderr.write(
      `snapshot: ${signal}: stopping once the organizations being written are (up to 8); nothing will be published (${signal === 'SIGINT' ? 'Ctrl-C' : 'signal'} again to quit at once)\n`,
    );
    controller.abort(new Interrupted(signal));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    enter(next: ImportPhase): void {
      phase = next;
    },
    dispose(): void {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

async function runImport(values: ReturnType<typeof args>['values']): Promise<void> {
  const contacts = await readable('contacts', values.contacts);
  const messages = await readable('messages', values.messages);
  const t0 = process.hrtime.bigint();
  // Open the store first: a dead Redis fails in a second, not after reading a 5 GiB file.
  const stores = await openStores(loadStoreConfig());
  // a bar on a terminal redraws on a timer: stopped whatever happens, or a failed import
  // would print its error and then never exit
  const progress = createProgress();
  const interrupt = interruptible(progress);
  try {
    let data: ImportData;
    try {
      data = await readImport(contacts, messages, progress);
    } finally {
      progress.stop();
    }
    interrupt.enter('staging');
    const organizations = await publishImport(stores.snapshots, data, interrupt.signal, () =>
      interrupt.enter('publishing'),
    );
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (values.json) {
      const summary = {
        organizations,
        contacts: data.contacts,
        messages: data.messages,
        seconds: Math.round(seconds * 1000) / 1000,
      };
      process.stdout.write(JSON.stringify(summary) + '\n');
    } else {
      for (const o of organizations) {
        process.stdout.write(
          `snapshot: organization ${o.organization_id} version ${o.version}: ${o.contacts} contacts, ${o.messages} messages\n`,
        );
      }
      process.stdout.write(
        `snapshot: published ${organizations.length} organization(s), ${data.contacts} contacts, ${data.messages} messages in ${seconds.toFixed(1)} s\n`,
      );
    }
  } finally {
    interrupt.dispose();
    await stores.close();
  }
}

/**
 * Lists the newest version of every organization; exit 1 when a pointer cannot be read, the
 * others listed all the same (one bad pointer hid them all: the listing failed whole).
 */
async function runList(json: boolean): Promise<number> {
  const config = loadStoreConfig();
  const note = await newDataDirNote('snapshot', config);
  if (note !== null) process.stderr.write(note);
  // a folder that is not there lists nothing, and is not made (the next run with the same typo
  // would be silent: an audit)
  const stores = note === null ? await openStores(config, undefined, 'read') : null;
  try {
    const { refs, unreadable } = stores === null ? { refs: [], unreadable: [] } : await stores.snapshots.listLatest();
    refs.sort((a, b) => (a.organizationId < b.organizationId ? -1 : 1));
    if (json) {
      process.stdout.write(
        JSON.stringify(refs.map((r) => ({ organization_id: r.organizationId, version: r.version }))) + '\n',
      );
    } else {
      if (refs.length === 0 && unreadable.length === 0) process.stdout.write('snapshot: no snapshot published yet\n');
      for (const r of refs) process.stdout.write(`${r.organizationId} version ${r.version}\n`);
    }
    for (const u of unreadable) process.stderr.write(`snapshot: ${visibleText(u.error)}\n`);
    return unreadable.length > 0 ? 1 : 0;
  } finally {
    await stores?.close();
  }
}

async function main(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = args(argv);
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    const [command, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
    if (command === 'import') {
      await runImport(values);
      return 0;
    }
    if (command === 'list') {
      // import's files given to list were ignored, exit 0: a mistyped command line looked done
      for (const flag of ['contacts', 'messages'] as const)
        if (values[flag] !== undefined) throw new UsageError(`list takes no --${flag}`);
      return await runList(values.json ?? false);
    }
    throw new UsageError(command === undefined ? 'missing command' : `unknown command ${JSON.stringify(command)}`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`snapshot: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      // As the server and the keys tool print them: one line a problem, naming the variable.
      process.stderr.write(err.problems.join('\n') + '\n');
      return 1;
    }
    if (err instanceof Interrupted) {
      process.stderr.write(`snapshot: ${err.message}: nothing was published, and what was staged was removed\n`);
      return err.exitCode;
    }
    if (err instanceof ImportError) {
      process.stderr.write(`snapshot: ${err.detail}\nsnapshot: nothing was published\n`);
      return 1;
    }
    const msg = (err as Error).message ?? String(err);
    // Expected failures (store, snapshot, file errors) carry a module prefix: no stack trace for them.
    const expected = /^(store|snapshot|import):/.test(msg) || (err as NodeJS.ErrnoException).code !== undefined;
    process.stderr.write(`snapshot: ${expected ? msg : ((err as Error).stack ?? msg)}\n`);
    return 1;
  }
}

endQuietlyOnClosedOutput();
process.exitCode = await main(process.argv.slice(2));
