// Environment → typed, validated configuration. The schema is the only definition of the settings:
// the Config type is derived from it, and the settings tables of docs/running-a-server.md list the
// same names. Long on purpose: one entry per setting (about 100), each with its default and
// description, in one list those tables and loadConfig are checked against.
import Type, { type Static } from 'typebox'
import { BlockList, isIP } from 'node:net'
import cron from 'node-cron'
import { isValidTimezone } from './billing/calendar.js'
import { currencyExponent } from './billing/money.js'
import { parseTrustedKeys } from './agent-releases/keys.js'

const Int = (options: { default?: number; minimum?: number; maximum?: number; description: string }) =>
  Type.Integer({ minimum: 0, ...options })

/** PUBLIC_BASE_URL when the operator sets none: right on a developer's machine only. */
export const developmentBaseUrl = 'http://localhost:3000'

export const ConfigSchema = Type.Object({
  PORT: Int({ default: 3000, maximum: 65535, description: 'Port to listen on' }),
  HOST: Type.String({ default: '0.0.0.0', minLength: 1, description: 'Address to listen on' }),
  DATABASE_URL: Type.String({
    default: 'data/club.db',
    minLength: 1,
    description: 'SQLite file path (or :memory:), or a postgres:// URL for PostgreSQL'
  }),
  DATABASE_POOL_MAX: Int({ default: 10, minimum: 1, maximum: 1000, description: "PostgreSQL: connections in each server process's pool" }),
  CURRENCY: Type.String({ default: 'EUR', pattern: '^[A-Z]{3}$', description: "The club's currency (ISO 4217): every price and charge is in it" }),
  CLUB_TIMEZONE: Type.String({
    default: 'UTC',
    minLength: 1,
    description: "The club's IANA timezone: where a membership's renewal dates fall unless the request names another"
  }),
  DATABASE_BUSY_TIMEOUT_MS: Int({
    default: 5000,
    minimum: 0,
    maximum: 600000,
    description: "How long a write waits for another process's write lock (the CLI, a second server) before answering 503"
  }),
  CLUB_ENV: Type.Enum(['development', 'production'], {
    default: 'development',
    description:
      'production (also set by NODE_ENV=production) refuses to start with a setting meant for development only: ' +
      'PAYMENT_PROVIDER=test, an empty DEVICE_TOKEN_SECRET or WEBHOOK_ENDPOINT_KEY, an empty METRICS_TOKEN or an empty SMTP_URL; development warns about them once at start'
  }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description: 'false, true, a hop count, or comma-separated proxy addresses/CIDRs whose X-Forwarded-For is trusted'
  }),
  PUBLIC_BASE_URL: Type.String({ default: developmentBaseUrl, pattern: '^https?://', description: 'Base of links the API sends out' }),
  CORS_ORIGINS: Type.String({
    default: '',
    description: 'Comma-separated exact origins (scheme://host[:port]) of browser apps allowed to call the API; empty allows none'
  }),
  API_LICENSE_NAME: Type.String({ default: 'Proprietary', minLength: 1, description: "The API's licence as the OpenAPI document names it" }),
  API_LICENSE_URL: Type.String({ default: '', pattern: '^(https?://.+)?$', description: "Where the API's licence can be read; empty leaves it out" }),
  API_CONTACT_EMAIL: Type.String({ default: '', pattern: '^([^@\\s]+@[^@\\s]+)?$', description: 'Whom integrators write to about the API; empty leaves it out' }),
  API_CONTACT_URL: Type.String({ default: '', pattern: '^(https?://.+)?$', description: 'A page for integrators; empty leaves it out' }),
  ACCESS_TOKEN_TTL_SECONDS: Int({ default: 3600, minimum: 60, description: 'Access token lifetime' }),
  REFRESH_TOKEN_TTL_SECONDS: Int({ default: 30 * 24 * 3600, minimum: 60, description: 'Refresh token lifetime' }),
  PASSWORD_GRANT_ENABLED: Type.Boolean({ default: true, description: 'Allow the password grant (first-party apps)' }),
  PASSWORD_HASH_COST: Int({
    default: 65536,
    minimum: 1024,
    description: 'scrypt N (a power of two). Lower it only for tests'
  }),
  API_KEY_RATE_LIMIT_MAX: Int({ default: 300, minimum: 1, description: 'Requests per window per client IP with an API key' }),
  API_KEY_RATE_LIMIT_WINDOW_SECONDS: Int({ default: 60, minimum: 1, description: 'Window of the API key rate limit' }),
  TOKEN_RATE_LIMIT_MAX: Int({ default: 120, minimum: 1, description: 'Token requests per minute per client IP (slows password guessing)' }),
  // No pattern: a schema mismatch message quotes the value, and a URL may carry a password (checked in loadConfig).
  REDIS_URL: Type.String({
    default: '',
    description:
      'redis:// or rediss:// URL (or a unix socket path) of a Redis the rate limits count in, shared by every server process; empty counts them in each process'
  }),
  REDIS_KEY_PREFIX: Type.String({
    default: 'club:',
    minLength: 1,
    pattern: '^\\S+$',
    description: 'Start of every key the server keeps in Redis: give each club sharing one Redis its own'
  }),
  BODY_LIMIT_BYTES: Int({ default: 1048576, minimum: 1024, description: 'Largest request body accepted' }),
  READ_CACHE_ENTRIES: Int({
    default: 10000,
    maximum: 1000000,
    description: 'Answers each read cache keeps (credentials, templates, template pages), checked against every write; 0 turns them off'
  }),
  PACKAGE_LATE_CANCEL_HOURS: Int({
    default: 0,
    maximum: 8760,
    description: 'A redemption gives its item back when cancelled at least this many hours before its event or booking begins; later the cancellation is refused (409); 0: until it begins'
  }),
  READINESS_TIMEOUT_MS: Int({
    default: 2000,
    minimum: 10,
    maximum: 60000,
    description: 'How long /health/ready waits for the database and the mail relay before answering 503'
  }),
  METRICS_TOKEN: Type.String({
    default: '',
    pattern: '^$|^.{16,}$',
    description: 'Bearer token (16+ characters) a scraper must send for /metrics; empty leaves /metrics open (keep it off the public network)'
  }),
  BACKUP_SCHEDULE: Type.String({
    default: '',
    description: 'Cron expression (node-cron, e.g. "0 3 * * *") at which the server backs up its database into BACKUP_DIR; empty takes none'
  }),
  BACKUP_DIR: Type.String({ default: 'data/backups', minLength: 1, description: 'Folder of the scheduled backups' }),
  BACKUP_KEEP: Int({ default: 7, minimum: 1, maximum: 10000, description: 'Scheduled backups kept; older ones are deleted after each new one' }),
  SHUTDOWN_TIMEOUT_SECONDS: Int({ default: 10, minimum: 1, description: 'How long in-flight requests may take on shutdown' }),
  // Identity flows: authorization codes, webview tokens, forum single sign-on, password reset, phone verification.
  AUTHORIZATION_CODE_TTL_SECONDS: Int({ default: 600, minimum: 10, maximum: 600, description: 'Authorization code lifetime (RFC 6749: at most 10 minutes)' }),
  WEBVIEW_TOKEN_TTL_SECONDS: Int({ default: 300, minimum: 30, maximum: 3600, description: "Lifetime of the embedded web view's access and refresh token" }),
  FORUM_CONNECT_SECRET: Type.String({
    default: '',
    pattern: '^(.{10,})?$',
    description: "DiscourseConnect shared secret (the forum's discourse_connect_secret, 10+ characters); empty turns forum sign-on off"
  }),
  FORUM_CONNECT_ORIGIN: Type.String({
    default: '',
    pattern: '^(https?://[^/?#]+/?)?$',
    description: "The forum's origin, e.g. https://forum.example.org; return_sso_url must be on it"
  }),
  SMTP_URL: Type.String({ default: '', pattern: '^(smtps?://.+)?$', description: 'smtp:// or smtps:// URL of the mail relay; empty writes mail to the log (development)' }),
  MAIL_FROM: Type.String({ default: 'Club <no-reply@localhost>', minLength: 3, description: 'From address of the mail the platform sends' }),
  PASSWORD_RESET_RATE_LIMIT_MAX: Int({ default: 20, minimum: 1, description: 'Password reset requests per hour per client IP' }),
  INVITATION_LINK_RATE_LIMIT_MAX: Int({ default: 30, minimum: 1, description: "Requests per hour per client IP to each of the invitation link's routes" }),
  PHONE_VERIFICATION_PROVIDER: Type.Enum(['log', 'twilio', 'firebase'], {
    default: 'log',
    description: 'Who sends signup SMS codes: log (development: written to the log), twilio (Verify), firebase (Identity Toolkit)'
  }),
  PHONE_RESEND_COOLDOWN_SECONDS: Int({ default: 60, description: 'Least time between two codes sent to one number' }),
  PHONE_SENDS_PER_NUMBER_PER_HOUR: Int({ default: 5, minimum: 1, description: 'Codes sent to one number per hour' }),
  PHONE_SENDS_PER_IP_PER_HOUR: Int({ default: 30, minimum: 1, description: 'Codes sent per client IP per hour' }),
  PHONE_CODE_PEPPER: Type.String({
    default: '',
    description: 'Server secret mixed into stored phone code hashes (log provider); empty: a random one per process'
  }),
  TWILIO_ACCOUNT_SID: Type.String({ default: '', description: 'Twilio account SID (or API key SID) for Verify' }),
  TWILIO_AUTH_TOKEN: Type.String({ default: '', description: 'Twilio auth token (or API key secret)' }),
  TWILIO_VERIFY_SERVICE_SID: Type.String({ default: '', description: 'Twilio Verify service SID (VA...)' }),
  TWILIO_VERIFY_BASE_URL: Type.String({ default: 'https://verify.twilio.com', pattern: '^https?://', description: 'Twilio Verify API base URL' }),
  FIREBASE_API_KEY: Type.String({ default: '', description: 'Firebase Web API key for the Identity Toolkit' }),
  FIREBASE_IDENTITY_TOOLKIT_BASE_URL: Type.String({
    default: 'https://identitytoolkit.googleapis.com',
    pattern: '^https?://',
    description: 'Identity Toolkit REST API base URL'
  }),
  REPLAY_POLL_INTERVAL_SECONDS: Int({ default: 30, minimum: 1, maximum: 3600, description: 'Status polling interval recommended to recording boxes' }),
  REPLAY_REGISTRATION_RATE_LIMIT_MAX: Int({ default: 30, minimum: 1, description: 'Recording box registrations per minute per client IP' }),
  REPLAY_STATUS_CACHE_ENTRIES: Int({
    default: 10000,
    minimum: 0,
    description: 'Recording boxes whose status answer is kept in memory between changes (the longest kept dropped first); 0 keeps none'
  }),
  REPLAY_SIGHTING_FLUSH_MS: Int({
    default: 1000,
    minimum: 10,
    maximum: 60000,
    description: "How often the status polls' lastSeenAt, kept in memory, is written to the database (and always on shutdown)"
  }),
  REPLAY_SERVER_DISK_FLOOR_PERCENT: Int({
    default: 10,
    minimum: 0,
    maximum: 100,
    description: "A box whose disk has less than this share free is DISK_LOW (its health's problems, the list's health=PROBLEM, replay_server.disk_low); 0: never"
  }),
  REPLAY_SERVER_ALERT_MAIL: Type.Enum(['on', 'off'], {
    default: 'on',
    description: 'Mail every admin when a camera fails or recovers, a disk runs low or a clock is skewed (the same as the replay_server.camera_failed, camera_recovered, disk_low and clock_skewed events); off: events only'
  }),
  AGENT_RELEASES_DIR: Type.String({ default: 'data/agent-releases', minLength: 1, description: 'Folder of the uploaded agent packages (club agent-releases add)' }),
  AGENT_RELEASE_PUBLIC_KEYS: Type.String({
    default: '',
    description:
      'Comma-separated public release keys (the publicKeySetting club agent-releases keygen prints) whose offline signatures an upload must carry; several while a key is rotated'
  }),
  AGENT_RELEASE_MAX_BYTES: Int({ default: 268435456, minimum: 1024, description: 'Largest agent package the upload route takes' }),
  BOX_NETWORKS: Type.String({
    default: '',
    description:
      "Comma-separated CIDRs (10.20.0.0/16, fd00::/64), containing only boxes, where the server may call a box that polls from another address (behind NAT, a VPN or a proxy it cannot vouch for); empty: a box is called only at the address its polls come from. Link-local, unspecified, multicast and loopback addresses are never called through it"
  }),
  REPLAY_SNAPSHOT_TIMEOUT_MS: Int({
    default: 5000,
    minimum: 100,
    maximum: 60000,
    description: "How long the server waits for a box's camera snapshot before answering 504"
  }),
  REPLAY_DEFAULT_SECONDS: Int({ default: 30, minimum: 1, maximum: 3600, description: 'Length of a replay when the request names none' }),
  REPLAY_MAX_SECONDS: Int({ default: 300, minimum: 1, maximum: 3600, description: 'Longest replay a player may ask for' }),
  REPLAY_MAX_AGE_SECONDS: Int({
    default: 600,
    minimum: 1,
    maximum: 86400,
    description: "A member's or guest's replay must end within this many seconds of now; older footage is for staff and admins, with a reason"
  }),
  REPLAY_MEMBER_RATE_LIMIT_MAX: Int({ default: 30, minimum: 1, description: 'Replays a member may ask for per hour (429 past it)' }),
  REPLAY_COURT_RATE_LIMIT_MAX: Int({ default: 10, minimum: 1, description: "Members' replays of one court per minute (429 past it)" }),
  FOOTAGE_LOG_RETENTION_DAYS: Int({
    default: 180,
    minimum: 1,
    maximum: 3650,
    description: 'How long the footage access log (every look at footage) is kept; the replays/cleanup job deletes older rows'
  }),
  EVENT_RETENTION_DAYS: Int({
    default: 30,
    minimum: 1,
    maximum: 3650,
    description: 'How long the events outbox keeps each event for the event feed (GET /apis/v2/events); the users/cleanup job erases older ones'
  }),
  FOOTAGE_CONTACT: Type.String({
    default: '',
    maxLength: 200,
    description: "Whom a filmed person asks about footage (an e-mail address or a page), shown by the court page and the console; empty: ask at the club's desk"
  }),
  REPLAY_URL_TTL_SECONDS: Int({ default: 900, minimum: 1, maximum: 604800, description: "How long a READY replay's downloadUrl stays valid" }),
  REPLAY_REQUEST_TIMEOUT_SECONDS: Int({
    default: 120,
    minimum: 1,
    description: 'A replay no box has started within this many seconds fails with reason box_unreachable'
  }),
  REPLAYS_REQUIRE_PACKAGE: Type.Boolean({ default: false, description: 'Each replay redeems a REPLAY package item (402 when none is left), given back if it fails' }),
  REPLAY_STORAGE_CREDENTIALS: Type.String({
    default: '',
    description: "Path of the credentials file (JSON) for the boxes' s3:// or gs:// bucket, with which the server signs download links and deletes clips"
  }),
  // The court's page (/r/{courtSlug}) and its sign (issue 25; docs/replays.md, "The court page and the court signs").
  CLUB_NAME: Type.String({ default: 'Club', minLength: 1, maxLength: 80, description: "The club's name as its court signs and replay pages show it" }),
  REPLAYS_REQUIRE_ACCOUNT: Type.Boolean({
    default: true,
    description: "The court's page asks a player to sign in (e-mail and password) before a replay; false lets guests in (needs REPLAYS_GUEST=true)"
  }),
  REPLAYS_GUEST: Type.Boolean({
    default: false,
    description: 'A player without an account gets replays from the court page (needs REPLAYS_REQUIRE_ACCOUNT=false); guests use no package item'
  }),
  REPLAY_PAGE_SECONDS: Type.String({
    default: '30,60',
    pattern: '^\\d+(,\\d+)*$',
    description: "The court page's buttons: comma-separated replay lengths in seconds, each at most REPLAY_MAX_SECONDS"
  }),
  REPLAY_GUEST_SESSION_TTL_SECONDS: Int({
    default: 86400,
    minimum: 60,
    maximum: 2592000,
    description: "How long a guest's token (kept on the phone) lasts: the guest's replays are listed on that phone until then"
  }),
  REPLAY_GUEST_COURT_RATE_LIMIT_MAX: Int({ default: 60, minimum: 1, description: 'Guest replays per hour per court' }),
  REPLAY_GUEST_ADDRESS_RATE_LIMIT_MAX: Int({ default: 20, minimum: 1, description: 'Guest replays (and guest sessions) per hour per client IP' }),
  REPLAY_SHOP_URL: Type.String({
    default: '',
    pattern: '^(https?://.+)?$',
    description: 'Where a member with no REPLAY item left can buy a package; the court page links to it. Empty: no link'
  }),
  REPLAY_RETENTION_DAYS: Int({ default: 30, minimum: 1, maximum: 3650, description: 'Replays older than this are expired by the replays/cleanup job: clip deleted, status EXPIRED' }),
  // Matches (issue 49; docs/replays.md, "Matches"): a booking's or event's whole interval, every angle.
  MATCH_RECORDING: Type.Enum(['off', 'bookings', 'events'], {
    default: 'off',
    description:
      "bookings: every BOOKING redemption of a filmed court becomes a match when it ends (plus MATCH_GRACE_SECONDS), one replay per camera filming the court; events: every event with recordMatch on its filmed courts; off: none"
  }),
  MATCH_GRACE_SECONDS: Int({ default: 120, minimum: 0, maximum: 3600, description: "How long after a booking's or event's end its match is asked of the boxes" }),
  MATCH_RETENTION_DAYS: Int({ default: 30, minimum: 1, maximum: 3650, description: "A match's angles expire this many days after its end (replays/cleanup job): clips deleted, status EXPIRED" }),
  MATCH_REQUIRES_PACKAGE: Type.Boolean({
    default: false,
    description: "A participant's first opening of a READY match redeems one REPLAY package item (402 when none is left); staff never pay"
  }),
  MATCH_MAIL: Type.Enum(['on', 'off'], { default: 'on', description: 'Mail each participant with an e-mail address a link once their match is READY (once per match); off: none' }),
  MATCH_MAX_MINUTES: Int({ default: 240, minimum: 1, maximum: 1440, description: 'A booking or event longer than this is not filmed as a match' }),
  DEVICE_TOKEN_SECRET: Type.String({
    default: '',
    pattern: '^$|^.{32,}$',
    description:
      'Key (32+ characters) from which device access tokens are derived. Empty: one is generated and kept in the database'
  }),
  // Payments (BILLING.md, "Payments" and "Money").
  PAYMENT_PROVIDER: Type.Enum(['test', 'stripe'], {
    default: 'test',
    description: "Who charges saved payment methods: test (built in; the card's last four digits decide) or stripe (PaymentIntents)"
  }),
  // No pattern: a schema mismatch message quotes the value, and this one is a secret (checked in loadConfig).
  STRIPE_SECRET_KEY: Type.String({ default: '', description: 'Stripe secret key (sk_... or restricted rk_...); required with PAYMENT_PROVIDER=stripe' }),
  STRIPE_API_BASE_URL: Type.String({
    default: 'https://api.stripe.com',
    // The SDK takes a host, port and protocol and adds /v1/... itself: a path here would be ignored.
    pattern: '^https?://[^/?#]+/?$',
    description: 'Stripe API origin (scheme, host and port); tests point it at a local server'
  }),
  // The deprecated product-offering list (RFC 8594 Sunset).
  PRODUCT_OFFERINGS_SUNSET: Type.String({
    default: '2027-06-30T00:00:00Z',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
    description: 'When the deprecated product-offering list may go away (a UTC instant), announced in its Sunset header'
  }),
  // Scheduled jobs and their webhook receivers (issue 14; docs/running-a-server.md, "Scheduled jobs").
  ...jobSettings(),
  // Webhook endpoints: events sent to integrators (issue 35; docs/integrating.md, "Events").
  ...webhookEndpointSettings()
})

/** What delivering events to webhook endpoints needs; see webhook-endpoints/. */
function webhookEndpointSettings() {
  return {
    WEBHOOK_ENDPOINT_KEY: Type.String({
      default: '',
      pattern: '^$|^.{32,}$',
      description: "Key (32+ characters) from which each webhook endpoint's signing secret is derived. Empty: one is generated and kept in the database"
    }),
    WEBHOOK_ALLOWED_NETWORKS: Type.String({
      default: '',
      description:
        'Comma-separated CIDRs (10.20.0.0/16, 127.0.0.1/32) of private, loopback or link-local addresses webhook endpoints may nevertheless be at; empty: endpoints must be at public addresses'
    }),
    WEBHOOK_POLL_MS: Int({
      default: 1000,
      minimum: 20,
      maximum: 60000,
      description: "How often the delivery worker looks for events other processes wrote and retries that fell due (this process's own events are sent at once)"
    }),
    WEBHOOK_LEASE_SECONDS: Int({
      default: 60,
      minimum: 16,
      maximum: 3600,
      description: "How long the process sending webhook deliveries holds its lease between renewals: another process takes over this long after the sender dies"
    })
  }
}

/** The scheduled jobs' settings; a block of its own so the schema above stays readable. */
function jobSettings() {
  const schedule = (cron: string, what: string) =>
    Type.String({ default: cron, minLength: 1, description: `Cron expression (node-cron, in CLUB_TIMEZONE) of ${what}` })
  return {
    // No pattern: a schema mismatch message quotes the value, and this one is a secret (checked in loadConfig).
    WEBHOOK_SECRET: Type.String({
      default: '',
      description: 'Standard Webhooks secret(s) the receivers check signatures with: whsec_ + base64 of 24+ bytes; several space-separated while rotating; empty: the receivers answer 503'
    }),
    SCHEDULER: Type.Enum(['internal', 'external'], {
      default: 'internal',
      description: 'internal: the server runs every job on its JOB_SCHEDULE_*; external: none, a scheduler outside calls the receivers'
    }),
    JOB_SCHEDULE_COURT_LOCKING: schedule('* * * * *', 'court-locking (lock places of events about to start, release ended ones)'),
    JOB_SCHEDULE_REMINDER: schedule('0 9 * * *', 'reminder (renewals, pauses ending, packages expiring)'),
    JOB_SCHEDULE_SUMMARY: schedule('5 0 * * *', "summary (the day before's figures, mailed to admins)"),
    JOB_SCHEDULE_USERS_CLEANUP: schedule('30 3 * * *', 'users-cleanup (expired credentials, old records, erasures)'),
    JOB_SCHEDULE_REPLAYS_CLEANUP: schedule('45 3 * * *', 'replays-cleanup (replays past REPLAY_RETENTION_DAYS)'),
    JOB_SCHEDULE_MEMBERSHIP_CHARGE: schedule('10 * * * *', 'membership-charge (the CHARGE job: renewals and retries)'),
    JOB_SCHEDULE_MEMBERSHIP_GRANT: schedule('20 * * * *', "membership-grant (the GRANT job: a membership's monthly perks)"),
    JOB_SCHEDULE_PACKAGES_EXPIRY: schedule('25 * * * *', 'packages-expiry (marks packages past their expiration EXPIRED)'),
    COURT_LOCK_MINUTES: Int({ default: 60, minimum: 0, maximum: 10080, description: "How long before an event starts its courts, pods, areas and the event itself can no longer be changed" }),
    REMINDER_RENEWAL_DAYS: Int({ default: 3, minimum: 1, maximum: 60, description: 'Members are reminded of a renewal this many days ahead' }),
    REMINDER_PACKAGE_DAYS: Int({ default: 7, minimum: 1, maximum: 365, description: 'Members are reminded of a package expiring with items left this many days ahead' }),
    RETENTION_DAYS: Int({ default: 90, minimum: 1, maximum: 3650, description: 'How long mail records, job runs and webhook deliveries are kept' }),
    USER_DELETION_GRACE_DAYS: Int({ default: 30, minimum: 0, maximum: 365, description: "Days between a member's DELETE /users/current and the erasure of their personal data" })
  }
}

/** JOB_SCHEDULE_* settings by name, for the scheduler and the checks. */
export const jobScheduleKeys = [
  'JOB_SCHEDULE_COURT_LOCKING',
  'JOB_SCHEDULE_REMINDER',
  'JOB_SCHEDULE_SUMMARY',
  'JOB_SCHEDULE_USERS_CLEANUP',
  'JOB_SCHEDULE_REPLAYS_CLEANUP',
  'JOB_SCHEDULE_MEMBERSHIP_CHARGE',
  'JOB_SCHEDULE_MEMBERSHIP_GRANT',
  'JOB_SCHEDULE_PACKAGES_EXPIRY'
] as const
export type Config = Static<typeof ConfigSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const keys = Object.keys(ConfigSchema.properties) as Array<keyof Config>

/**
 * Reads the settings from an environment (process.env by default), converts and checks them.
 * Throws a ConfigError whose message is one line naming the variable at fault.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {}
  for (const key of keys) {
    const value = env[key]
    if (value !== undefined && value !== '') raw[key] = value
  }
  // The usual Node switch means the same: a deployment that says production anywhere is held to it.
  if (env.NODE_ENV === 'production') raw.CLUB_ENV = 'production'
  const converted: Record<string, unknown> = {}
  for (const key of keys) {
    const schema = ConfigSchema.properties[key] as unknown as SettingSchema
    converted[key] = key in raw ? fromText(schema, raw[key]) : schema.default
  }
  const candidate = { ...converted, ...overrides }
  for (const key of keys) {
    const schema = ConfigSchema.properties[key] as unknown as SettingSchema
    if (!fits(schema, candidate[key])) {
      const shown = env[key] ?? String(candidate[key])
      throw new ConfigError(`${key}=${JSON.stringify(shown)} is not valid: expected ${describe(schema as unknown as Record<string, unknown>)}`)
    }
  }
  const config = candidate as Config
  if (!Number.isInteger(Math.log2(config.PASSWORD_HASH_COST))) {
    throw new ConfigError(`PASSWORD_HASH_COST=${config.PASSWORD_HASH_COST} is not valid: expected a power of two`)
  }
  parseTrustProxy(config.TRUST_PROXY)
  parseBoxNetworks(config.BOX_NETWORKS)
  parseNetworks('WEBHOOK_ALLOWED_NETWORKS', config.WEBHOOK_ALLOWED_NETWORKS)
  try {
    parseTrustedKeys(config.AGENT_RELEASE_PUBLIC_KEYS)
  } catch (err) {
    throw new ConfigError(`AGENT_RELEASE_PUBLIC_KEYS is not valid: ${(err as Error).message}`)
  }
  parseCorsOrigins(config.CORS_ORIGINS)
  checkRedisUrl(config.REDIS_URL)
  checkPayments(config)
  if (Number.isNaN(Date.parse(config.PRODUCT_OFFERINGS_SUNSET))) {
    throw new ConfigError(`PRODUCT_OFFERINGS_SUNSET=${JSON.stringify(config.PRODUCT_OFFERINGS_SUNSET)} is not valid: expected a UTC instant such as 2027-06-30T00:00:00Z`)
  }
  if (!isValidTimezone(config.CLUB_TIMEZONE)) {
    throw new ConfigError(`CLUB_TIMEZONE=${JSON.stringify(config.CLUB_TIMEZONE.slice(0, 40))} is not valid: expected an IANA timezone such as Europe/Madrid`)
  }
  checkJobSettings(config)
  replayPageSeconds(config)
  checkGuests(config)
  if (config.BACKUP_SCHEDULE && !cron.validate(config.BACKUP_SCHEDULE)) {
    throw new ConfigError(`BACKUP_SCHEDULE=${JSON.stringify(config.BACKUP_SCHEDULE)} is not valid: expected a cron expression like "0 3 * * *"`)
  }
  return config
}

/** REPLAY_PAGE_SECONDS as the court page's replay lengths, each within REPLAY_MAX_SECONDS. */
export function replayPageSeconds(config: Pick<Config, 'REPLAY_PAGE_SECONDS' | 'REPLAY_MAX_SECONDS'>): number[] {
  const seconds = config.REPLAY_PAGE_SECONDS.split(',').map(Number)
  if (seconds.length > 4 || seconds.some((s) => !Number.isInteger(s) || s < 1 || s > config.REPLAY_MAX_SECONDS)) {
    throw new ConfigError(
      `REPLAY_PAGE_SECONDS=${JSON.stringify(config.REPLAY_PAGE_SECONDS.slice(0, 40))} is not valid: expected one to four lengths in seconds, each from 1 to REPLAY_MAX_SECONDS (${config.REPLAY_MAX_SECONDS})`
    )
  }
  return seconds
}

/** The two guest settings say one thing together: either guests are let in, or an account is required. */
function checkGuests(config: Config): void {
  if (config.REPLAYS_GUEST && config.REPLAYS_REQUIRE_ACCOUNT) {
    throw new ConfigError('REPLAYS_GUEST=true needs REPLAYS_REQUIRE_ACCOUNT=false: a club that lets guests in does not require an account')
  }
  if (!config.REPLAYS_GUEST && !config.REPLAYS_REQUIRE_ACCOUNT) {
    throw new ConfigError('REPLAYS_REQUIRE_ACCOUNT=false needs REPLAYS_GUEST=true: without an account and without guests nobody could ask for a replay')
  }
}

/** Each job's schedule, and the webhook secret's form (named, never shown). */
function checkJobSettings(config: Config): void {
  for (const key of jobScheduleKeys) {
    if (!cron.validate(config[key])) throw new ConfigError(`${key}=${JSON.stringify(config[key].slice(0, 60))} is not valid: expected a cron expression like "0 9 * * *"`)
  }
  webhookSecrets(config.WEBHOOK_SECRET)
}

/**
 * WEBHOOK_SECRET as keys: each `whsec_` + base64 of at least 24 bytes (Standard Webhooks), several
 * space-separated while a sender rotates from one to the next. Empty: none (the receivers answer 503).
 */
export function webhookSecrets(value: string): Buffer[] {
  return value
    .split(/\s+/)
    .filter(Boolean)
    .map((secret, i) => {
      const body = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : ''
      const key = Buffer.from(body, 'base64')
      // Round-tripping catches characters base64 decoding would silently skip.
      if (!body || key.length < 24 || key.toString('base64').replace(/=+$/, '') !== body.replace(/=+$/, '')) {
        throw new ConfigError(`WEBHOOK_SECRET is not valid: secret ${i + 1} must be whsec_ followed by the base64 of at least 24 random bytes`)
      }
      return key
    })
}

/**
 * The defaults that make a developer's machine work and a real club unsafe, one sentence each naming
 * its setting: a server started for real use refuses them (main.ts), a development one warns once.
 */
export function developmentOnlySettings(config: Pick<Config, 'PAYMENT_PROVIDER' | 'DEVICE_TOKEN_SECRET' | 'WEBHOOK_ENDPOINT_KEY' | 'METRICS_TOKEN' | 'SMTP_URL'>): string[] {
  const found: string[] = []
  if (config.PAYMENT_PROVIDER === 'test') found.push('PAYMENT_PROVIDER=test accepts any card but two and charges nobody: set PAYMENT_PROVIDER=stripe')
  if (!config.DEVICE_TOKEN_SECRET) {
    found.push('DEVICE_TOKEN_SECRET is empty: the key of every box token would sit in the database; set 32+ random characters')
  }
  if (!config.WEBHOOK_ENDPOINT_KEY) {
    found.push("WEBHOOK_ENDPOINT_KEY is empty: the key of every webhook endpoint's signing secret would sit in the database; set 32+ random characters")
  }
  if (!config.METRICS_TOKEN) found.push('METRICS_TOKEN is empty, so /metrics is open to anyone: set a token of 16+ characters')
  // The log mailer writes each mail whole: a reset link in the log is a sign-in to its account for whoever reads the log.
  if (!config.SMTP_URL) found.push('SMTP_URL is empty, so mail (password reset links included) is written to the log: set the mail relay')
  return found
}

/**
 * The refusal of a process about to `doing` (start, run) in production (CLUB_ENV, or NODE_ENV) with a
 * development-only setting, naming each; null when it may. One rule for every process that can charge
 * or send: the server at its start (main.ts) and the commands of `club` that do (cli.ts).
 */
export function productionRefusal(config: Pick<Config, 'CLUB_ENV'> & Parameters<typeof developmentOnlySettings>[0], doing: string): string | null {
  const unsafe = developmentOnlySettings(config)
  if (config.CLUB_ENV !== 'production' || unsafe.length === 0) return null
  return `refusing to ${doing} in production (CLUB_ENV or NODE_ENV):\n${unsafe.map((line) => `  ${line}`).join('\n')}`
}

/** The payment settings that depend on each other; the secret key is named, never shown. */
function checkPayments(config: Config): void {
  if (config.PAYMENT_PROVIDER === 'stripe') {
    if (!config.STRIPE_SECRET_KEY) throw new ConfigError('STRIPE_SECRET_KEY is required with PAYMENT_PROVIDER=stripe')
    // A publishable key (pk_...) is the usual mistake: it would fail on the first charge instead of at start.
    if (!/^(sk|rk)_(test|live)_\S+$/.test(config.STRIPE_SECRET_KEY)) {
      throw new ConfigError('STRIPE_SECRET_KEY is not valid: expected a Stripe secret key (sk_test_..., sk_live_... or rk_...)')
    }
  }
  // The schema checks three capitals, and Intl formats any three letters; only the codes ICU knows
  // are currencies (catches EUO, USS), and their minor units are what prices are kept in.
  let known = false
  try {
    currencyExponent(config.CURRENCY)
    known = Intl.supportedValuesOf('currency').includes(config.CURRENCY)
  } catch {
    known = false
  }
  if (!known) {
    throw new ConfigError(`CURRENCY=${JSON.stringify(config.CURRENCY.slice(0, 20))} is not valid: expected an ISO 4217 currency code, such as EUR`)
  }
}

/**
 * What a setting's schema may say. Settings are flat text from the environment, so four kinds cover
 * them; converting and checking these by hand spares every process (each CLI command, each test file)
 * loading typebox/value, some 300 modules, to read its environment. config.test.ts fails when a
 * setting's schema uses a keyword not in this list, so none can go unchecked.
 */
export const SETTING_KEYWORDS = ['type', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'default', 'description'] as const

interface SettingSchema {
  type?: 'integer' | 'string' | 'boolean'
  enum?: readonly unknown[]
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  default?: unknown
}

/**
 * An environment variable's text as its setting's type. Whole numbers only (no "1.5" taken as 1, no
 * "0x10"); booleans as true/false in any case, or 1/0. Anything else stays text and fails `fits`.
 */
function fromText(schema: SettingSchema, text: unknown): unknown {
  if (typeof text !== 'string') return text
  const trimmed = text.trim()
  if (schema.type === 'integer') return /^-?\d+$/.test(trimmed) ? Number(trimmed) : text
  if (schema.type === 'boolean') {
    const word = trimmed.toLowerCase()
    return word === 'true' || word === '1' ? true : word === 'false' || word === '0' ? false : text
  }
  return text
}

const patterns = new Map<string, RegExp>()

function fits(schema: SettingSchema, value: unknown): boolean {
  if (schema.enum) return schema.enum.includes(value)
  if (schema.type === 'boolean') return typeof value === 'boolean'
  if (schema.type === 'integer') {
    return Number.isSafeInteger(value) && (schema.minimum === undefined || (value as number) >= schema.minimum) && (schema.maximum === undefined || (value as number) <= schema.maximum)
  }
  if (schema.type !== 'string' || typeof value !== 'string') return false
  // JSON Schema counts characters, not UTF-16 units.
  const length = [...value].length
  if (schema.minLength !== undefined && length < schema.minLength) return false
  if (schema.maxLength !== undefined && length > schema.maxLength) return false
  if (schema.pattern === undefined) return true
  let pattern = patterns.get(schema.pattern)
  if (!pattern) patterns.set(schema.pattern, (pattern = new RegExp(schema.pattern, 'u')))
  return pattern.test(value)
}

function describe(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.join(', ')}`
  if (schema.type === 'integer') {
    const bounds = [schema.minimum !== undefined ? `>= ${schema.minimum}` : '', schema.maximum !== undefined ? `<= ${schema.maximum}` : '']
    return `a whole number ${bounds.filter(Boolean).join(' and ')}`.trim()
  }
  if (schema.type === 'boolean') return 'true or false'
  if (schema.pattern) return `a value matching ${schema.pattern}`
  return 'a non-empty string'
}

/** BOX_NETWORKS as a BlockList the box calls check addresses against (see replay-servers/box-call.ts). */
export function parseBoxNetworks(value: string): BlockList {
  return parseNetworks('BOX_NETWORKS', value)
}

/** A setting holding comma-separated CIDRs as a BlockList; the error names the setting. */
export function parseNetworks(setting: string, value: string): BlockList {
  const list = new BlockList()
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(entry)
    const family = m ? isIP(m[1]!) : 0
    const prefix = m ? Number(m[2]) : -1
    if (family === 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new ConfigError(`${setting}=${JSON.stringify(value.slice(0, 200))} is not valid: ${JSON.stringify(entry.slice(0, 60))} is not a CIDR such as 10.20.0.0/16 or fd00::/64`)
    }
    list.addSubnet(m![1]!, prefix, family === 4 ? 'ipv4' : 'ipv6')
  }
  return list
}

/** TRUST_PROXY as Fastify's `trustProxy` option takes it. */
export function parseTrustProxy(value: string): boolean | number | string[] {
  const v = value.trim()
  if (v === 'true') return true
  if (v === 'false' || v === '') return false
  if (/^\d+$/.test(v)) return Number(v)
  const list = v.split(',').map((s) => s.trim()).filter(Boolean)
  if (list.some((s) => !/^[0-9a-fA-F:.\/]+$/.test(s))) {
    throw new ConfigError(`TRUST_PROXY=${JSON.stringify(value)} is not valid: expected true, false, a hop count or a list of addresses`)
  }
  return list
}

/**
 * REDIS_URL in a form ioredis reads: redis:// or rediss:// with a host (and optionally a user,
 * password, port and database number), or the absolute path of a unix socket. The value is never
 * quoted back: it may carry a password.
 */
export function checkRedisUrl(value: string): void {
  if (value === '' || value.startsWith('/')) return
  let parsed: URL | undefined
  try {
    parsed = new URL(value)
  } catch {
    parsed = undefined
  }
  if (!parsed || !/^rediss?:$/.test(parsed.protocol) || !parsed.hostname || !/^(\/\d*)?$/.test(parsed.pathname) || (parsed.port !== '' && Number(parsed.port) === 0)) {
    throw new ConfigError(
      'REDIS_URL is not valid: expected redis://[user:password@]host[:port][/db], rediss://... (TLS) or the absolute path of a unix socket'
    )
  }
}

/**
 * CORS_ORIGINS as a list of exact origins. Each must be an origin as a browser sends it (no path, no
 * trailing slash, no wildcard): a browser's Origin header is compared to these strings as they are.
 */
export function parseCorsOrigins(value: string): string[] {
  const list = value.split(',').map((s) => s.trim()).filter(Boolean)
  for (const origin of list) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {
      parsed = undefined
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(
        `CORS_ORIGINS=${JSON.stringify(value)} is not valid: ${JSON.stringify(origin)} is not an origin like https://club.example.com`
      )
    }
  }
  return list
}
