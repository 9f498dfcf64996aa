// Table types: the only description of the database's rows. Timestamps are ISO 8601 UTC strings,
// which sort as text; JSON columns are text holding JSON. Long on purpose: one interface per table
// (over 50) and the Database map Kysely types every query with, in one place as the migrations are.
import type { Generated } from 'kysely'
import type { PhoneProviderName } from '../signup/providers/provider.js'
import type { AgentRolloutBoxState, AgentRolloutGroupStatus, AgentRolloutStatus } from '@club/contract'
import type {
  ChangeAction,
  ChargeType,
  EventType,
  MembershipPlanStatus,
  MembershipType,
  PhoneVerificationStatus,
  ReplayServerStatus,
  ReplayKind,
  ReplayStatus,
  FootageActor,
  FootagePurpose,
  SubscriptionCondition,
  SubscriptionStatus,
  TemplateStatus,
  TemplateType,
  UpdateState,
  UserRole
} from '@club/contract'

export interface UsersTable {
  id: string
  email: string
  password_hash: string
  first_name: string | null
  last_name: string | null
  role: UserRole
  created_at: string
  updated_at: string
  /** DELETE /users/current: the cleanup job erases the account USER_DELETION_GRACE_DAYS later. */
  deletion_requested_at: string | null
  /** When the personal data was erased; the row stays because orders name it. */
  erased_at: string | null
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
  /** The lifetimes the pair was issued with; a refresh issues the next pair with the same. */
  access_ttl_seconds: number | null
  refresh_ttl_seconds: number | null
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
  provider_customer_ref: string | null
  provider_method_ref: string | null
}

/** A membership plan. Amounts are minor units of `currency`; rates are basis points. */
export interface MembershipsTable {
  id: string
  display_name: string
  description: string | null
  type: MembershipType
  charge_type: ChargeType
  currency: string
  price_minor: number
  initiation_fee_minor: number
  additional_member_fee_minor: number
  duration_days: number | null
  /** How many members a subscription of this plan covers at most, the owner included; null: no cap. */
  max_enrollments: number | null
  /** JSON: Array<{ name, basisPoints, inclusive }> */
  taxes: string
  /** JSON: Array<{ name, basisPoints }> */
  fees: string
  area_id: string | null
  /** JSON: { minimumWeeks, maximumWeeks, pausesPerYear, pauseFeeMinor }, or null when pauses are not offered. */
  pause_policy: string | null
  grace_days: number
  hold_days: number
  self_service: number
  perk_template_id: string | null
  /** JSON: Array<{ categories: string[], basisPoints, description }> */
  product_discounts: string
  status: MembershipPlanStatus
  created_at: string
  updated_at: string
}

export type OrderStatus = 'PENDING' | 'PAID' | 'FAILED' | 'REQUIRES_AUTHENTICATION' | 'REFUNDED'
/** PURCHASE: products bought; REDEMPTION: the zero-total order a package redemption is recorded as. */
export type OrderKind = 'MEMBERSHIP' | 'MEMBERSHIP_RENEWAL' | 'PAUSE_FEE' | 'REFUND' | 'PURCHASE' | 'REDEMPTION'

/** Every charge and refund, with what explains its total. */
export interface OrdersTable {
  id: string
  user_id: string
  creator_id: string
  kind: OrderKind
  membership_subscription_id: string | null
  /** The billing period a membership charge pays for (its start). */
  period_start: string | null
  status: OrderStatus
  currency: string
  subtotal_minor: number
  total_minor: number
  /** JSON: the priced lines, fees and taxes (billing/pricing.ts) */
  lines: string
  fees: string
  taxes: string
  provider: string | null
  provider_ref: string | null
  idempotency_key: string
  failure_code: string | null
  failure_message: string | null
  created_at: string
  updated_at: string
}

export interface MembershipSubscriptionsTable {
  id: string
  membership_id: string
  member_id: string
  creator_id: string
  status: SubscriptionStatus
  condition: SubscriptionCondition
  condition_updated_at: string
  timezone: string
  /** The schedule's anchor, a local wall time in `timezone` (billing/calendar.ts). */
  anchor_local: string
  charge_type: ChargeType
  currency: string
  price_minor: number
  initiation_fee_minor: number
  additional_member_fee_minor: number
  duration_days: number | null
  start_date: string
  end_date: string | null
  cancellation_requested_at: string | null
  cycle_index: number
  billing_cycle_start: string | null
  billing_cycle_end: string | null
  last_charge_date: string | null
  next_charge_date: string | null
  /** In GRACE and HOLD: when the failed renewal is tried again. */
  next_retry_date: string | null
  next_grant_date: string | null
  last_grant_date: string | null
  last_order_id: string | null
  /** JSON: Array<ValidationError>, or null */
  errors: string | null
  created_at: string
  updated_at: string
  /** 1 once its `membership_subscription.canceled` event was written (migration 0028). */
  cancellation_told?: number | null
}

/** Who a subscription covers: its owner (is_owner 1) and the members added to it. */
export interface MembershipEnrollmentsTable {
  id: string
  subscription_id: string
  membership_id: string
  /** The plan's type, for the one-active-enrollment-per-type index. */
  membership_type: MembershipType
  user_id: string
  creator_id: string
  is_owner: number
  custom_fee_minor: number
  start_date: string
  /** null: open-ended; in the future: ends then; in the past: ended. */
  end_date: string | null
  created_at: string
  /**
   * INVITED until the user accepts (ACCEPTED) or declines (DECLINED), or the owner or staff withdraw it
   * (WITHDRAWN); an invitation is never active (its end_date is its start).
   */
  invitation_status: 'INVITED' | 'ACCEPTED' | 'DECLINED' | 'WITHDRAWN'
  /** SHA-256 of the invitation mail's single-use token; null when no link was mailed. */
  invitation_token_hash: string | null
}

export interface MembershipPausesTable {
  id: string
  subscription_id: string
  start_date: string
  /** As scheduled, or when it was ended early or called off. */
  end_date: string
  weeks: number
  fee_minor: number
  fee_order_id: string | null
  ended_early_at: string | null
  cancelled_at: string | null
  created_at: string
}

/** One field of a subscription corrected by staff or an admin: JSON of the API's value before and after. */
export interface MembershipSubscriptionChangesTable {
  id: string
  subscription_id: string
  field: string
  from_value: string
  to_value: string
  changed_by: string
  changed_by_role: string
  changed_at: string
}

export interface MembershipGrantsTable {
  id: string
  subscription_id: string
  grant_date: string
  outcome: 'granted' | 'skipped_paused' | 'skipped_hold'
  perk_template_id: string | null
  created_at: string
}

export type MembershipJobType = 'CHARGE' | 'GRANT' | 'PAUSES'

export interface MembershipJobRunsTable {
  id: string
  type: MembershipJobType
  date: string
  started_at: string
  finished_at: string | null
  /** JSON: outcome -> count */
  counts: string
  error: string | null
}

export type PackageRowStatus = 'ACTIVE' | 'EXHAUSTED' | 'EXPIRED' | 'CANCELED'
export type PackageSource = 'STAFF' | 'PURCHASE' | 'MEMBERSHIP'

export interface PackagesTable {
  id: string
  user_id: string
  template_id: string | null
  template_version: number | null
  display_name: string
  display_name_plural: string
  /** EXPIRED is derived at read time; the expiry job writes it only for filtering. */
  status: PackageRowStatus
  expiration_date: string
  source: PackageSource
  order_id: string | null
  /** Its share of the order line it was bought on, for a pro-rata refund. */
  paid_minor: number
  currency: string | null
  grant_id: string | null
  creator_id: string | null
  canceled_at: string | null
  refund_order_id: string | null
  created_at: string
  updated_at: string
}

export interface PackageItemsTable {
  id: string
  package_id: string
  /** 1-based position in the package. */
  item: number
  type: string
  display_name: string
  display_name_plural: string
  total_items: number
  remaining_items: number
  /** JSON PackageItemConstraints as issued. */
  constraints: string
}

export interface PackageRedemptionsTable {
  id: string
  package_id: string
  item_id: string
  item: number
  type: string
  user_id: string
  creator_id: string
  target_key: string
  /** JSON: the target as resolved. */
  target: string
  target_start_at: string | null
  order_id: string
  order_item_id: string
  redemption_date: string
  cancelation_date: string | null
  forfeited: number
  /** Staff who gave the item back on purpose, past the cancellation rules, and why. */
  given_back_by: string | null
  given_back_reason: string | null
  /** When what it paid for was delivered (a replay READY, migration 0034): from then on its item stays spent. */
  delivered_at: string | null
}

export type ProductType = 'PACKAGE' | 'MEMBERSHIP' | 'MERCHANDISE' | 'SERVICE'

export interface ProductsTable {
  id: string
  sku: string
  name: string
  description: string
  type: ProductType
  currency: string
  price_minor: number
  tax_name: string | null
  tax_basis_points: number
  tax_inclusive: number
  picture_small: string | null
  picture_medium: string | null
  picture_large: string | null
  package_template_id: string | null
  membership_id: string | null
  /** ON_SALE, or WITHDRAWN: deleted from the catalogue, kept because orders name it. */
  status: 'ON_SALE' | 'WITHDRAWN'
  created_at: string
  updated_at: string
}

export interface ProductCategoriesTable {
  product_id: string
  category: string
}

export interface ProductAreasTable {
  product_id: string
  area_id: string
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
  /** JSON: { periods: Array<{ type, days, start, end }> } in `timezone`; null: every hour is OFF PEAK. */
  session_periods: string | null
  /** IANA zone of the area's clock; null: the club's (CLUB_TIMEZONE). */
  timezone: string | null
}
export interface PodsTable extends VenueRow {
  area_id: string
}
export interface CourtsTable extends VenueRow {
  area_id: string
  pod_id: string | null
}

export interface AuthorizationCodesTable {
  id: string
  code_hash: string
  client_id: string
  user_id: string
  redirect_uri: string
  scope: string
  code_challenge: string | null
  code_challenge_method: 'S256' | null
  expires_at: string
  used_at: string | null
  /** The token family issued from the code, so a reused code can revoke it. */
  family_id: string | null
  created_at: string
}

export interface ForumConnectNoncesTable {
  nonce_hash: string
  user_id: string
  expires_at: string
}

export interface PasswordResetTokensTable {
  id: string
  user_id: string
  token_hash: string
  expires_at: string
  used_at: string | null
  created_at: string
}

/** A record of each mail sent; the body is not kept, as it may carry a single-use link. */
export interface MailOutboxTable {
  id: string
  kind: string
  recipient: string
  subject: string
  status: 'pending' | 'sent' | 'failed'
  error: string | null
  created_at: string
  sent_at: string | null
}

export interface PhoneVerificationsTable {
  id: string
  provider: PhoneProviderName
  phone_number: string
  /** The provider's handle: Twilio's verification SID or Firebase's sessionInfo. */
  provider_ref: string | null
  /** HMAC-SHA256(pepper, id + code) when this server owns the code (log provider). */
  code_hash: string | null
  status: PhoneVerificationStatus
  remaining_attempts: number
  expires_at: string
  created_at: string
  updated_at: string
}

export interface PhoneVerificationSendsTable {
  id: string
  phone_number: string
  client_ip: string
  created_at: string
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
  /** 0 or 1 (0039): with MATCH_RECORDING=events, a match on each of its filmed courts. */
  record_match: number
}

export interface EventRefsTable {
  event_id: string
  kind: 'area' | 'pod' | 'court'
  ref_id: string
  position: number
}

export interface TemplatesTable {
  /** The template's place in the list's order, from its updated_at (migration 0031); its search row's rowid. */
  seq: number
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

/** Templates per place reference (migration 0009's triggers keep it), for a one-place list's total. */
export interface TemplateRefCountsTable {
  kind: TemplateRefsTable['kind']
  ref_id: string
  total: number
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
  /** The address the box's latest status poll came from; the server calls the box only there (or inside BOX_NETWORKS). */
  poll_address: string | null
  /** When poll_address became what it is (migration 0036); null: before that was recorded. */
  poll_address_since: string | null
  area_id: string | null
  /** JSON of a ReplayServerConfig; null until an admin sets one. */
  config: string | null
  target_version: string | null
  /** What the box reports (dpkg --print-architecture); picks the release it is offered. */
  architecture: string | null
  /** HH:MM-HH:MM in the club's timezone; null: update when idle. */
  update_window: string | null
  update_state: UpdateState | null
  /** The version update_state is about. */
  update_version: string | null
  update_reason: string | null
  /** The box key: a raw Ed25519 public key, base64; null for a box that registered without one. */
  public_key: string | null
  /** When the last key proof accepted for this record was made: a proof must be newer (no replay). */
  key_proof_at: string | null
  /** When a record without a key adopted the one its own poll proved (ISO), and that poll's address. */
  key_adopted_at: string | null
  key_adopted_from: string | null
  /** What integrators were last told: 1 online, 0 offline, null nothing yet (events/outbox; replay-servers/connectivity.ts). */
  online_told: Generated<number | null>
  last_seen_at: string | null
  created_at: string
  updated_at: string
}

/** A box's latest health report (migration 0037; replay-servers/health.ts). */
export interface ReplayServerHealthTable {
  replay_server_id: string
  reported_at: string
  /** JSON: the report's disk, temperature, memory and uptime. */
  report: string
  /** JSON: StoredCamera[] (each camera as reported, with since). */
  cameras: string
  failed_cameras: number
  clock_offset_ms: number | null
  disk_state: 'LOW' | 'OK'
  disk_since: string
  clock_state: 'SKEWED' | 'OK'
  clock_since: string
}

/** A change of a camera's, the disk's or the clock's state, the last 200 per box. */
export interface ReplayServerHealthChangesTable {
  id: string
  replay_server_id: string
  at: string
  subject: string
  state: string
  problem: string | null
}

/** What was last told of a camera or condition (replay-servers/health-teller.ts). */
export interface ReplayServerHealthToldTable {
  replay_server_id: string
  subject: string
  told: string
  told_at: string
}

/** A known deviceId registered again without proving the box key: pending until an admin decides. */
export interface ReplayServerClaimsTable {
  id: string
  replay_server_id: string
  /** SHA-256 of the claim's own serverId. */
  server_id_hash: string
  /**
   * The proven key's fingerprint (one claim per box and key), or 'none:<source address>' for a claim
   * without a proven key (one per box and address; rows from before migration 0020's code say 'none').
   */
  key_id: string
  /** Kept only when the claimant proved it holds it. */
  public_key: string | null
  proof: 'NONE' | 'REFUSED' | 'PROVEN'
  proof_problem: string | null
  source_ip: string
  hostname: string | null
  display_name: string | null
  version: string | null
  local_ip: string | null
  server_url: string | null
  registrations: number
  created_at: string
  updated_at: string
}

export interface AgentReleasesTable {
  id: string
  version: string
  architecture: string
  size: number
  sha256: string
  /** Ed25519 signature (base64) of releaseSignedText, made offline by a trusted release key and checked on upload. */
  signature: string
  /** The file's name inside AGENT_RELEASES_DIR. */
  file: string
  created_at: string
}

/** One row (id 1) whose counter triggers raise on every change a status poll's answer depends on. */
export interface ReplayServerStatusChangesTable {
  id: number
  counter: number
}

/** How many write transactions changed each table the read caches read from (PostgreSQL only: migration 0030). */
export interface TableChangesTable {
  table_name: string
  counter: number
}

// Scheduled jobs (issue 14).
export type JobTrigger = 'webhook' | 'schedule' | 'cli'

export interface JobRunsTable {
  id: string
  job: string
  trigger: JobTrigger
  /** The webhook-id or the scheduled slot (ISO); null when run by hand. */
  delivery: string | null
  /** The time the job ran as of. */
  date: string
  started_at: string
  finished_at: string | null
  status: 'running' | 'succeeded' | 'failed'
  /** JSON: outcome -> count */
  counts: string
  note: string | null
  error: string | null
}

export interface JobDeliveriesTable {
  job: string
  /** `webhook:<webhook-id>` or `schedule:<slot>` */
  key: string
  trigger: JobTrigger
  /** Which process holds the lease. */
  holder: string
  lease_expires_at: string
  completed_at: string | null
  run_id: string | null
  created_at: string
}

export interface EventLocksTable {
  event_id: string
  locked_at: string
  /** The event's end. */
  locked_until: string
  released_at: string | null
}

export interface RemindersSentTable {
  kind: string
  subject_id: string
  occurrence: string
  recipient_id: string
  sent_at: string
}

export interface SummariesTable {
  id: string
  day: string
  timezone: string
  /** JSON: the SummaryFigures */
  figures: string
  text: string
  html: string
  created_at: string
}

/** A player without an account, known by the token on their phone (migration 0016). */
export interface ReplayGuestsTable {
  id: string
  token_hash: string
  /** The court whose page made the session (0021); null for one made before: it may ask for nothing. */
  court_id: string | null
  created_at: string
  expires_at: string
}

/** A player's replay of a court (migrations 0015, 0016): a user's or a guest's. */
export interface ReplaysTable {
  id: string
  user_id: string | null
  guest_id: string | null
  court_id: string
  replay_server_id: string | null
  camera_id: string
  start_at: string
  end_at: string
  status: ReplayStatus
  reason: string | null
  location: string | null
  duration_seconds: number | null
  size_bytes: number | null
  sha256: string | null
  package_id: string | null
  redemption_id: string | null
  created_at: string
  updated_at: string
  /** The box's cloudStorageBucket when the clip was reported READY (0023). */
  bucket: string | null
  taken_down_at: string | null
  /** Null with taken_down_at set: the `club` command line. */
  taken_down_by: string | null
  taken_down_reason: string | null
  /** CLIP, or MATCH: one camera's angle of a match (0039). */
  kind: ReplayKind
  match_id: string | null
}

/** A booking's or event's whole interval on a filmed court (0039, matches/service.ts). */
export interface MatchesTable {
  id: string
  court_id: string
  source_type: 'BOOKING' | 'EVENT'
  redemption_id: string | null
  event_id: string | null
  start_at: string
  end_at: string
  /** JSON: the chapters as stored, each with its replay's id and asker ({at, label, replayId, userId}). */
  chapters: string
  /** When the participants were mailed the link: set once, conditionally, by the process that mails. */
  mailed_at: string | null
  created_at: string
  updated_at: string
}

export interface DoNotFilmIntervalsTable {
  id: string
  court_id: string
  start_at: string
  end_at: string
  reason: string
  created_by: string | null
  created_at: string
}

/** A court's footage taken down for an interval (migration 0033). */
export interface FootageTakedownsTable {
  id: string
  court_id: string
  start_at: string
  end_at: string
  reason: string
  /** The replay whose takedown made it; null: asked for the court's interval. */
  replay_id: string | null
  replays_taken_down: number
  /** Null: the `club` command line. */
  created_by: string | null
  created_at: string
}

/** A box told to delete a takedown's minutes (0033): pending while deleted_at is null. */
export interface FootageTakedownDeletionsTable {
  takedown_id: string
  replay_server_id: string
  deleted_at: string | null
  deleted_files: number | null
}

/** One look at footage (migration 0022): kept FOOTAGE_LOG_RETENTION_DAYS, read only by admins. */
export interface FootageAccessTable {
  id: string
  actor: FootageActor
  user_id: string | null
  guest_id: string | null
  purpose: FootagePurpose
  reason: string | null
  court_id: string | null
  replay_server_id: string | null
  camera_id: string
  replay_id: string | null
  start_at: string
  end_at: string
  address: string | null
  created_at: string
}

/** The events outbox (issue 35; events/outbox.ts): seq grows in commit order, from outbox_sequence. */
export interface OutboxEventsTable {
  seq: number
  /** evt_…: the event's id, a webhook delivery's webhook-id. */
  id: string
  type: EventType
  resource_id: string
  /** JSON: the resource as its GET route answered right after the change. */
  data: string
  created_at: string
}

/** One row (id 1): the last seq given to an event. */
export interface OutboxSequenceTable {
  id: number
  last_seq: number
}

// Webhook endpoints (issue 35, 0029): no secret column; see webhook-endpoints/secrets.ts.
export interface WebhookEndpointsTable {
  id: string
  url: string
  /** JSON array of event types. */
  event_types: string
  description: string | null
  /** 0 or 1. */
  enabled: number
  secret_generation: number
  secret_created_at: string
  previous_secret_expires_at: string | null
  after_seq: number
  failing_since: string | null
  disabled_reason: string | null
  created_at: string
  updated_at: string
}

export type EndpointDeliveryStatus = 'PENDING' | 'RETRYING' | 'SUCCEEDED' | 'FAILED'

export interface EndpointDeliveriesTable {
  id: string
  endpoint_id: string
  event_seq: number
  event_id: string
  event_type: string
  resource_id: string
  status: EndpointDeliveryStatus
  attempt_count: number
  next_attempt_at: string | null
  due_since: string
  created_at: string
  updated_at: string
}

export interface EndpointDeliveryAttemptsTable {
  id: string
  delivery_id: string
  attempted_at: string
  response_status: number | null
  duration_ms: number
  error: string | null
}

/** A staged rollout of an agent release (migration 0038). */
export interface AgentRolloutsTable {
  id: string
  version: string
  status: AgentRolloutStatus
  area_id: string | null
  error_threshold_percent: number
  success_threshold_percent: number
  health_seconds: number
  silent_timeout_minutes: number
  halted_reason: string | null
  /** The admin's user id; null: made with `club rollouts create`. */
  created_by: string | null
  created_at: string
  updated_at: string
}

/** A rollout's group; position 1 opens first. */
export interface AgentRolloutGroupsTable {
  rollout_id: string
  position: number
  /** null: named canaries. */
  percent: number | null
  status: AgentRolloutGroupStatus
  opened_at: string | null
  completed_at: string | null
}

/** A box's place in a rollout, fixed when it starts, and where it stands. */
export interface AgentRolloutBoxesTable {
  rollout_id: string
  replay_server_id: string
  position: number
  state: AgentRolloutBoxState
  reason: string | null
  offered_at: string | null
  version_at: string | null
  recording_since: string | null
  finished_at: string | null
}

export interface Database {
  users: UsersTable
  oauth_clients: OAuthClientsTable
  tokens: TokensTable
  api_keys: ApiKeysTable
  payment_methods: PaymentMethodsTable
  memberships: MembershipsTable
  orders: OrdersTable
  membership_subscriptions: MembershipSubscriptionsTable
  membership_enrollments: MembershipEnrollmentsTable
  membership_job_runs: MembershipJobRunsTable
  membership_pauses: MembershipPausesTable
  membership_subscription_changes: MembershipSubscriptionChangesTable
  membership_grants: MembershipGrantsTable
  regions: RegionsTable
  areas: AreasTable
  pods: PodsTable
  courts: CourtsTable
  authorization_codes: AuthorizationCodesTable
  forum_connect_nonces: ForumConnectNoncesTable
  password_reset_tokens: PasswordResetTokensTable
  mail_outbox: MailOutboxTable
  phone_verifications: PhoneVerificationsTable
  phone_verification_sends: PhoneVerificationSendsTable
  series: SeriesTable
  events: EventsTable
  event_refs: EventRefsTable
  templates: TemplatesTable
  template_refs: TemplateRefsTable
  template_ref_counts: TemplateRefCountsTable
  template_versions: TemplateVersionsTable
  template_search: TemplateSearchTable
  settings: SettingsTable
  replay_servers: ReplayServersTable
  replay_server_claims: ReplayServerClaimsTable
  replay_server_health: ReplayServerHealthTable
  replay_server_health_changes: ReplayServerHealthChangesTable
  replay_server_health_told: ReplayServerHealthToldTable
  agent_releases: AgentReleasesTable
  agent_rollouts: AgentRolloutsTable
  agent_rollout_groups: AgentRolloutGroupsTable
  agent_rollout_boxes: AgentRolloutBoxesTable
  replay_server_status_changes: ReplayServerStatusChangesTable
  table_changes: TableChangesTable
  packages: PackagesTable
  package_items: PackageItemsTable
  package_redemptions: PackageRedemptionsTable
  products: ProductsTable
  product_categories: ProductCategoriesTable
  product_areas: ProductAreasTable
  // Scheduled jobs (issue 14).
  job_runs: JobRunsTable
  job_deliveries: JobDeliveriesTable
  event_locks: EventLocksTable
  reminders_sent: RemindersSentTable
  summaries: SummariesTable
  replays: ReplaysTable
  matches: MatchesTable
  replay_guests: ReplayGuestsTable
  footage_access: FootageAccessTable
  do_not_film_intervals: DoNotFilmIntervalsTable
  footage_takedowns: FootageTakedownsTable
  footage_takedown_deletions: FootageTakedownDeletionsTable
  outbox_events: OutboxEventsTable
  outbox_sequence: OutboxSequenceTable
  webhook_endpoints: WebhookEndpointsTable
  endpoint_deliveries: EndpointDeliveriesTable
  endpoint_delivery_attempts: EndpointDeliveryAttemptsTable
}
