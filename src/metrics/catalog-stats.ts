import type { Catalog, CatalogStats } from '../catalog/catalog.js';
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

/**
 * Catalog-wide snapshot load totals (admin reloads, polls and broadcasts alike). The totals are
 * read at every scrape; the per-organization lists only when the metrics print those series again
 * (Metrics.render), so a scrape no longer lists every organization for two numbers.
 */
export function catalogReloadStats(catalog: Catalog): ReloadStat {
  const totals = catalog.loadTotals();
  let full: CatalogStats | null = null;
  const stats = () => (full ??= catalog.stats());
  return {
    loadsOk: totals.ok,
    loadsFailed: totals.failed,
    lastReloadSeconds: totals.lastReloadSeconds,
    get byOrganization() {
      return stats().loadsByOrganization.map((o) => ({
        organizationId: o.organization_id,
        ok: o.ok,
        failed: o.failed,
      }));
    },
    get failing() {
      return stats().failures.map((f) => f.organization_id);
    },
  };
}
