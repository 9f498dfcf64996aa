// Table types: the only description of the database's rows. Timestamps are ISO 8601 UTC strings,
// which sort as text; JSON columns are text holding JSON.
import type { Generated } from 'kysely'
import type { ReplayServerStatus, UserRole } from '@club/contract'

export interface UsersTable {
  id: string
  email: string
  password_hash: string
  first_name: string | null
  last_name: string | null
  role: UserRole
  created_at: string
  updated_at: string
}

export interface OAuthClientsTable {
  id: string
  name: string
  secret_hash: string
  /** JSON array of exact redirect URIs. */
  redirect_uris: string
  /** JSON array of grant type names the client may use. */
  grants: string
  /** JSON array of scopes the client may ask for. */
  scopes: string
  created_at: string
}

export interface TokensTable {
  id: string
  kind: 'access' | 'refresh'
  token_hash: string
  user_id: string | null
  client_id: string | null
  scope: string
  /** Every token descended from one login shares a family; reuse of a refresh token revokes it. */
  family_id: string
  expires_at: string
  revoked_at: string | null
  /** Refresh tokens only: when it was exchanged. */
  used_at: string | null
  created_at: string
}

export interface ApiKeysTable {
  id: string
  user_id: string
  key_hash: string
  /** The first characters, to tell keys apart in a list without revealing them. */
  prefix: string
  name: string | null
  created_at: string
  revoked_at: string | null
  last_used_at: string | null
}

export interface PaymentMethodsTable {
  id: string
  user_id: string
  brand: string
  last4: string
  exp_month: number
  exp_year: number
  is_default: Generated<number>
  created_at: string
}

/** Regions, areas, pods and courts share this shape; the parent columns differ. */
interface VenueRow {
  id: string
  name: string
  /** Unique, URL-safe, derived from the name. */
  slug: string
  created_at: string
  updated_at: string
}

export type RegionsTable = VenueRow
export interface AreasTable extends VenueRow {
  region_id: string
}
export interface PodsTable extends VenueRow {
  area_id: string
}
export interface CourtsTable extends VenueRow {
  area_id: string
  pod_id: string | null
}

/** Server-side settings that must survive restarts (the generated device token key). */
export interface SettingsTable {
  key: string
  value: string
  created_at: string
}

export interface ReplayServersTable {
  id: string
  device_id: string
  /** SHA-256 of the device's serverId, its secret for the status call; the serverId itself is never kept. */
  server_id_hash: string
  /** Raised to invalidate the access token (rotation, revocation, rejection). */
  token_generation: Generated<number>
  /** SHA-256 of the derived access token, for Bearer look-ups; valid only while APPROVED. */
  token_hash: string
  status: ReplayServerStatus
  hostname: string | null
  display_name: string | null
  version: string | null
  local_ip: string | null
  server_url: string | null
  area_id: string | null
  /** JSON of a ReplayServerConfig; null until an admin sets one. */
  config: string | null
  target_version: string | null
  last_seen_at: string | null
  created_at: string
  updated_at: string
}

export interface Database {
  users: UsersTable
  oauth_clients: OAuthClientsTable
  tokens: TokensTable
  api_keys: ApiKeysTable
  payment_methods: PaymentMethodsTable
  regions: RegionsTable
  areas: AreasTable
  pods: PodsTable
  courts: CourtsTable
  settings: SettingsTable
  replay_servers: ReplayServersTable
}
