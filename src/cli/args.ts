/** Command-line details the tools share. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { dataDirFileProblem } from '../store/open-store.js';

type Tokens = NonNullable<ReturnType<typeof parseArgs>['tokens']>;

/** Bad usage of a command-line tool: its message, the usage text, exit 2. */
export class UsageError extends Error {}

/**
 * parseArgs (with tokens) whose errors are UsageErrors, refusing an option of `once` given twice
 * (default: every option not `multiple`).
 */
export function parseOptions<C extends ParseArgsConfig>(config: C, once?: readonly string[]) {
  const parsed = (() => {
    try {
      return parseArgs({ ...config, tokens: true as const });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  const names =
    once ??
    Object.entries(config.options ?? {})
      .filter(([, o]) => !o.multiple)
      .map(([name]) => name);
  const repeated = repeatedOption((parsed.tokens ?? []) as Tokens, names);
  if (repeated !== null) throw new UsageError(`--${repeated} given more than once`);
  return parsed;
}

/**
 * The first of `names` given more than once (parseArgs keeps the last value and says nothing:
 * `--scopes a --scopes b` made a key with the second scopes only), or null.
 */
export function repeatedOption(tokens: Tokens, names: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const t of tokens) {
    if (t.kind !== 'option' || !names.includes(t.name)) continue;
    if (seen.has(t.name)) return t.name;
    seen.add(t.name);
  }
  return null;
}

/**
 * The note for a read-only command whose DATA_DIR does not exist: it answers from nothing and
 * does not create the folder, but says so, or a mistyped DATA_DIR would go unnoticed. Null when
 * there is nothing to say (Redis, or the folder exists). Throws when a file stands where the
 * folder, a parent or a subfolder should be, as the server's start refuses it (these commands
 * said the folder "did not exist", or printed an ENOTDIR from a mkdir they do not mean to make:
 * audits). Call it before the store is opened (opening creates the folder).
 */
export async function newDataDirNote(
  tool: string,
  store: { redisUrl: string | null; dataDir: string },
): Promise<string | null> {
  if (store.redisUrl !== null) return null;
  const problem = await dataDirFileProblem(store.dataDir);
  if (problem !== null) throw new Error(problem);
  const dir = path.resolve(store.dataDir);
  if (existsSync(dir)) return null;
  return `${tool}: note: DATA_DIR ${JSON.stringify(dir)} did not exist (nothing was ever stored there): check the path\n`;
}
