/** How `npm run reload` words one server's answer (its --json prints the whole summary instead). */

/** Reloaded organizations named on a server's line; --json lists every one. */
export const LISTED = 10;

export interface ServerReloadSummary {
  reloaded: { organization_id: string; version: number }[];
  unchanged: number;
}

/** `N reloaded (org vV, ... up to LISTED, K more: --json lists them), M unchanged` */
export function reloadSummaryText(s: ServerReloadSummary): string {
  const shown = s.reloaded.slice(0, LISTED).map((r) => `${r.organization_id} v${r.version}`);
  if (s.reloaded.length > LISTED) shown.push(`${s.reloaded.length - LISTED} more: --json lists them`);
  return `${s.reloaded.length} reloaded${shown.length > 0 ? ` (${shown.join(', ')})` : ''}, ${s.unchanged} unchanged`;
}
