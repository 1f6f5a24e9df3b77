import type { Catalog } from '../catalog/catalog.js';
import type { OrgStat, ReloadStat } from './metrics.js';

/** Per-organization index figures from catalog.stats(), for the scrape. */
export function catalogOrgStats(catalog: Catalog): OrgStat[] {
  return catalog.stats().organizations.map((o) => ({
    organizationId: o.organization_id,
    version: o.version,
    messages: o.messages,
    contacts: o.contacts,
  }));
}

/** Catalog-wide snapshot load totals (admin reloads, polls and broadcasts alike). */
export function catalogReloadStats(catalog: Catalog): ReloadStat {
  const s = catalog.stats();
  return {
    loadsOk: s.loads.ok,
    loadsFailed: s.loads.failed,
    lastReloadSeconds: s.lastReloadSeconds,
    byOrganization: s.loadsByOrganization.map((o) => ({
      organizationId: o.organization_id,
      ok: o.ok,
      failed: o.failed,
    })),
    failing: s.failures.map((f) => f.organization_id),
  };
}
