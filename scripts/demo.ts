/**
 * `npm run demo`: a working service on a fresh machine with nothing else installed. Generates
 * demo data, imports it into the embedded store, creates a demo key, prints a ready curl line,
 * then runs the server in the foreground (Ctrl-C stops it). Uses the real CLIs, nothing private.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const dataDir = process.env.DATA_DIR ?? './data';
const demoDir = path.join(dataDir, 'demo-input');
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
delete env.REDIS_URL; // the demo always runs on the embedded store
const tsx = ['--import', 'tsx'];
// The service and its CLIs run compiled, as in production (`npm run demo` builds dist/ first).
const compiled = (file: string) => ['--enable-source-maps', path.join('dist', file)];

function run(args: string[], what: string): string {
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    console.error(`demo: ${what} failed (exit ${r.status})`);
    process.exit(1);
  }
  return r.stdout;
}

/** Whether host:port can be listened on now (tried and closed at once). */
function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

// The ports first: a taken one stopped the server only after a key was made and a curl line
// printed, with no hint of what to change.
const port = process.env.PORT ?? '3000';
const adminPort = process.env.ADMIN_PORT ?? '9464';
for (const [name, host, p] of [
  ['PORT', process.env.HOST ?? '0.0.0.0', port],
  ['ADMIN_PORT', process.env.ADMIN_HOST ?? '127.0.0.1', adminPort],
] as const) {
  if (!(await portFree(host, Number(p)))) {
    // ports found free now, each unlike the other and the taken ones (PORT + 1 could be the
    // running demo's own ADMIN_PORT: an audit with 5801 / 5802)
    const taken = new Set([Number(port), Number(adminPort)]);
    const free = async (h: string, from: number): Promise<number> => {
      for (let q = from; q < from + 200 && q <= 65535; q++)
        if (!taken.has(q) && (await portFree(h, q))) {
          taken.add(q);
          return q;
        }
      return from;
    };
    const newPort = await free(process.env.HOST ?? '0.0.0.0', Number(port) + 1);
    const newAdmin = await free(process.env.ADMIN_HOST ?? '127.0.0.1', Number(adminPort) + 1);
    console.error(
      `demo: port ${p} (${name}) is in use: another server, or an earlier demo still running. Stop it, or choose free ports, e.g.\n  PORT=${newPort} ADMIN_PORT=${newAdmin} npm run demo`,
    );
    process.exit(1);
  }
}

if (!existsSync(path.join(demoDir, 'messages.ndjson'))) {
  console.log('demo: generating 20,000 messages of 500 contacts in 1 organization ...');
  run(
    [
      ...tsx,
      'scripts/gen.ts',
      '--messages',
      '20000',
      '--contacts',
      '500',
      '--organizations',
      '1',
      '--seed',
      '7',
      '--out',
      demoDir,
    ],
    'data generation',
  );
}
console.log('demo: importing into the embedded store at ' + dataDir + ' ...');
run(
  [
    ...compiled('cli/snapshot.js'),
    'import',
    '--contacts',
    path.join(demoDir, 'contacts.ndjson'),
    '--messages',
    path.join(demoDir, 'messages.ndjson'),
    '--json',
  ],
  'import',
);

const firstContact = JSON.parse(readFileSync(path.join(demoDir, 'contacts.ndjson'), 'utf8').split('\n')[0]) as {
  organization_id: string;
};
const org = firstContact.organization_id;
const created = JSON.parse(
  run(
    [
      ...compiled('cli/keys.js'),
      'create',
      '--organization-id',
      org,
      '--scopes',
      'contacts:read,messages:read',
      '--name',
      'demo',
      '--json',
    ],
    'key creation',
  ),
) as { key: string };

console.log(`
demo: organization ${org}
demo: API key (shown once) ${created.key}
demo: try
  curl -s -H 'Authorization: Bearer ${created.key}' 'http://127.0.0.1:${port}/contacts/message-search?organization_id=${org}&q=pedido&limit=2'
`);

const server = spawn(process.execPath, compiled('main.js'), { env, stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => server.kill(sig));
server.on('exit', (code) => process.exit(code ?? 0));
