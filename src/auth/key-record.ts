/** A stored API key (CONTRACT 7). The secret itself is never stored, only its SHA-256 hex digest. */
export interface KeyRecord {
  prefix: string;
  name: string;
  /** hex SHA-256 of the secret part */
  hash: string;
  organization_ids: string[];
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}
