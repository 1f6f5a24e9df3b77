/**
 * Why a listener could not open, naming the variables that set it (CONTRACT 8: a bad value
 * stops the start with a message that names the variable). uWS only says that it failed.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/** The variables a listener's address comes from. */
export interface ListenVars {
  host: 'HOST' | 'ADMIN_HOST';
  port: 'PORT' | 'ADMIN_PORT';
}

export async function listenFailure(host: string, port: number, vars: ListenVars): Promise<Error> {
  const where = `http: cannot listen on ${host}:${port}`;
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return new Error(
        `${where}: ${vars.host} ${JSON.stringify(host)} is neither an IP address nor a name that resolves`,
      );
    }
  }
  const local = new Set(['0.0.0.0', '::']);
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) local.add(a.address);
  if (!addresses.some((a) => local.has(a)))
    return new Error(`${where}: ${vars.host} ${JSON.stringify(host)} is not an address of this machine`);
  return new Error(`${where} (${vars.port} ${port} is in use or not permitted)`);
}
