// Table types: the only description of the database's rows. Timestamps are ISO 8601 UTC strings,
// which sort as text; JSON columns are text holding JSON.
import type { Generated } from 'kysely'
import type { ChangeAction, TemplateStatus, TemplateType, UserRole } from '@club/contract'

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

export interface SeriesTable {
  id: string
  name: string
  description: string | null
  type: string
  subtype: string | null
  created_at: string
  updated_at: string
}

export interface EventsTable {
  id: string
  name: string
  description: string | null
  type: string
  subtype: string | null
  /** JSON array of strings. */
  tags: string
  start_at: string
  end_at: string
  series_id: string | null
  created_at: string
  updated_at: string
}

export interface EventRefsTable {
  event_id: string
  kind: 'area' | 'pod' | 'court'
  ref_id: string
  position: number
}

export interface TemplatesTable {
  seq: Generated<number>
  id: string
  type: TemplateType
  status: TemplateStatus
  name: string
  description: string | null
  /** JSON object. */
  data: string
  /** data.subtype when it is a string, for the subtype filter. */
  subtype: string | null
  version: number
  created_by: string
  last_updated_by: string
  created_at: string
  updated_at: string
}

export interface TemplateRefsTable {
  template_id: string
  /** in_region rows are derived: every region the template lies in, for the regionId filter. */
  kind: 'region' | 'area' | 'pod' | 'court' | 'in_region'
  ref_id: string
  position: number
  /** The template's updated_at, repeated so that filtered pages come out of the index in order. */
  updated_at: string
}

export interface TemplateVersionsTable {
  id: string
  template_id: string
  version: number
  name: string
  description: string | null
  status: TemplateStatus
  data: string
  /** JSON {regions, areas, pods, courts}: arrays of ids. */
  places: string
  changed_by: string
  changed_at: string
  change_action: ChangeAction
}

/** Full-text (trigram) index of templates' name and description; rowid = templates.seq. */
export interface TemplateSearchTable {
  rowid: number
  name: string
  description: string | null
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
  series: SeriesTable
  events: EventsTable
  event_refs: EventRefsTable
  templates: TemplatesTable
  template_refs: TemplateRefsTable
  template_versions: TemplateVersionsTable
  template_search: TemplateSearchTable
}
