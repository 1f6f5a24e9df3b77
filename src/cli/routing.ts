/**
 * `npm run routing -- nginx --shards FILE [--listen PORT|HOST:PORT] [--workers N]`: prints an
 * nginx configuration routing each organization_id to its shard's upstream group.
 * `npm run routing -- organizations --shards FILE --shard NAME`: prints the ORGANIZATIONS value
 * of one shard's replicas, so proxy and replicas read the same assignment.
 * Exit 0 done, 1 a bad SUNSET_AT (nginx: its error pages carry the replicas' Sunset), 2 bad usage
 * or a bad shards file.
 */
import { ConfigError, loadSunsetConfig } from '../config/config.js';
import { renderNginxConf } from '../routing/nginx-conf.js';
import { readShardsFile } from '../routing/shards-file.js';
import { parseOptions, UsageError } from './args.js';
import { endQuietlyOnClosedOutput } from './closed-stdout.js';

const USAGE = `Usage: npm run routing -- nginx --shards FILE [--listen PORT|HOST:PORT] [--workers N]
       npm run routing -- organizations --shards FILE --shard NAME

nginx          prints an nginx.conf sending each organization_id to its shard's upstreams
               (run it with: nginx -c <file> -p <dir>; pid, logs and temp folders go under <dir>);
               with SUNSET_AT set as on the replicas, nginx's own errors carry Sunset too
organizations  prints the ORGANIZATIONS value for the replicas of shard NAME

The shards file (JSON): {"shards": [{"name": "a", "upstreams": ["10.0.0.1:3000"],
"organizations": ["<uuid>", ...]}, ...]}; every organization in exactly one shard.

Options:
  --shards FILE   the shard assignment (required)
  --listen ADDR   nginx's listen address (default 8080)
  --workers N     nginx worker processes (default 1)
  --shard NAME    the shard, for organizations
  -h, --help      show this text
`;

function main(argv: string[]): number {
  try {
    // (a value option given twice is refused: parseArgs alone keeps the last, silently)
    const { values, positionals } = parseOptions({
      args: argv,
      allowPositionals: true,
      options: {
        shards: { type: 'string' },
        listen: { type: 'string', default: '8080' },
        workers: { type: 'string', default: '1' },
        shard: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    const [command, ...rest] = positionals;
    if (command !== 'nginx' && command !== 'organizations')
      throw new UsageError(`expected the command nginx or organizations, got ${JSON.stringify(command ?? '')}`);
    if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
    if (values.shards === undefined) throw new UsageError('--shards FILE is required');
    const listenPort = Number(/[0-9]{1,5}$/.exec(values.listen!)?.[0]);
    if (
      !/^([A-Za-z0-9.-]+:|\[[0-9A-Fa-f:.]+\]:)?[0-9]{1,5}$/.test(values.listen!) ||
      !(listenPort >= 1 && listenPort <= 65535)
    )
      throw new UsageError(`--listen must be PORT or HOST:PORT, a port 1-65535, got ${JSON.stringify(values.listen)}`);
    if (!/^[1-9][0-9]?$/.test(values.workers!))
      throw new UsageError(`--workers must be an integer 1-99, got ${JSON.stringify(values.workers)}`);
    const shards = readShardsFile(values.shards);
    if (command === 'nginx') {
      let sunsetAt: number | null;
      try {
        sunsetAt = loadSunsetConfig();
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        // as the server and the other tools print it: one line, naming the variable
        process.stderr.write(err.problems.join('\n') + '\n');
        return 1;
      }
      process.stdout.write(
        renderNginxConf(shards, { listen: values.listen!, workers: Number(values.workers), sunsetAt }),
      );
      return 0;
    }
    if (values.shard === undefined) throw new UsageError('--shard NAME is required for organizations');
    const shard = shards.shards.find((s) => s.name === values.shard);
    if (!shard)
      throw new UsageError(
        `no shard named ${JSON.stringify(values.shard)} in ${values.shards} (shards: ${shards.shards.map((s) => s.name).join(', ')})`,
      );
    process.stdout.write(shard.organizations.join(',') + '\n');
    return 0;
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(
      `${(err as Error).message.startsWith('routing:') ? '' : 'routing: '}${(err as Error).message}\n${usage ? `\n${USAGE}` : ''}`,
    );
    return 2;
  }
}

endQuietlyOnClosedOutput();
process.exitCode = main(process.argv.slice(2));
