// Replay servers, the box's side: a venue's recording box registers, polls its status, and receives
// its area, camera configuration and device token once an admin approves it. The admins' side of the
// same records is replay-servers-admin.ts.
import Type, { type Static } from 'typebox'
import { FootageTakedownOrder } from './footage-takedowns.js'
import { CameraId, DateTime, ErrorBody, ItemRef, Nullable, defineRoutes, noSecurity } from './common.js'
import { HEALTH_REPORT_MAX_LENGTH, ReplayServerHealth } from './replay-server-health.js'

export { CameraId }

export const ReplayServerStatus = Type.Enum(['PENDING', 'APPROVED', 'REJECTED', 'REVOKED'])
export type ReplayServerStatus = Static<typeof ReplayServerStatus>

/** Semantic version, as the agent reports its own (https://semver.org, section 2 and 9-10). */
export const SemverPattern =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$'
export const Semver = Type.String({ pattern: SemverPattern, maxLength: 100, examples: ['1.4.0'] })
export const HttpUrl = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2000 })
export const IpAddress = Type.Union([Type.String({ format: 'ipv4' }), Type.String({ format: 'ipv6' })])
/** 1 to 200 printable ASCII characters. */
export const DeviceId = Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x20-\\x7E]+$' })

export const LogoPlacement = Type.Enum(['top-left', 'top-right', 'bottom-left', 'bottom-right', 'center'])
export type LogoPlacement = Static<typeof LogoPlacement>
export const VideoCodec = Type.Enum(['h264', 'hevc', 'copy'])
export type VideoCodec = Static<typeof VideoCodec>
export const AudioCodec = Type.Enum(['aac', 'opus', 'none'])
export type AudioCodec = Static<typeof AudioCodec>

/** Where a camera can be read from. */
export const FeedUrl = Type.String({ pattern: '^(rtsps?|https?|srt|file)://.+', maxLength: 2000 })
const FilePath = Type.String({ minLength: 1, maxLength: 1000 })


export const Camera = Type.Object(
  {
    id: CameraId,
    name: Type.Optional(Type.String({ maxLength: 200 })),
    feed: FeedUrl,
    feed2: Type.Optional(FeedUrl),
    isEnabled: Type.Boolean({ default: true }),
    videoCodec: Type.Optional(VideoCodec),
    audioCodec: Type.Optional(AudioCodec),
    distortion1: Type.Optional(Type.Number({ minimum: -1, maximum: 1, description: 'Lens correction k1' })),
    distortion2: Type.Optional(Type.Number({ minimum: -1, maximum: 1, description: 'Lens correction k2' })),
    rotation: Type.Optional(Type.Number({ minimum: -360, maximum: 360, description: 'Degrees, clockwise' })),
    scale: Type.Optional(Type.Number({ minimum: 0.1, maximum: 4, description: 'Output size factor' })),
    vignette: Type.Optional(Type.Number({ minimum: 0, maximum: Math.PI / 2, description: 'Vignette angle, radians' })),
    lutPath: Type.Optional(FilePath),
    courtIds: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 64,
        description: "The courts this camera films (courts of the box's area); a replay of a court is cut from one of them"
      })
    )
  },
  { additionalProperties: false }
)
export type Camera = Static<typeof Camera>

export const ReplayServerConfig = Type.Object(
  {
    apiBaseUrl: Type.Optional(HttpUrl),
    cloudStorageBucket: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, examples: ['file:///var/lib/club/clips'] })),
    logoPath: Type.Optional(FilePath),
    logoPlacement: Type.Optional(LogoPlacement),
    cloudCredentialsPath: Type.Optional(FilePath),
    postrollPath: Type.Optional(FilePath),
    cleanupEnabled: Type.Boolean({ default: false }),
    uploadMaxBytesPerSecond: Type.Optional(
      Type.Integer({
        minimum: 16384,
        description: "The most a match's upload sends per second (a player's replay uploads first and is never held back); none: no cap"
      })
    ),
    cameras: Type.Array(Camera, { maxItems: 64, default: [] })
  },
  { additionalProperties: false }
)
export type ReplayServerConfig = Static<typeof ReplayServerConfig>

/** A box key's public half: a raw Ed25519 public key (32 bytes), base64. */
export const BoxPublicKey = Type.String({
  pattern: '^[A-Za-z0-9+/]{43}=$',
  description: 'The box key: a raw Ed25519 public key (32 bytes), base64'
})

/**
 * Proof that a registration comes from the holder of the box key the server already has for this
 * deviceId: an Ed25519 signature, base64, of boxKeyProofText(...). The timestamp must be within two
 * minutes of the server's clock and newer than the last proof the server accepted for the box.
 */
export const BoxKeyProof = Type.Object(
  {
    timestamp: DateTime({ description: 'When the proof was made (ISO 8601, UTC)' }),
    signature: Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$', description: 'Ed25519 signature (64 bytes), base64, of boxKeyProofText' })
  },
  { additionalProperties: false }
)
export type BoxKeyProof = Static<typeof BoxKeyProof>

/**
 * What a box key signs to prove a registration: purpose, deviceId, public key, timestamp, the
 * serverUrl the registration reports (empty when none) and the server it is meant for (the origin of
 * the URL the box registers with, e.g. `https://club.example`), one a line. The serverUrl is signed
 * because the server calls the box there with its access token; the server's origin so that a proof
 * sent to one server is worth nothing at another.
 */
export function boxKeyProofText(proof: { deviceId: string; publicKey: string; timestamp: string; serverUrl?: string; audience: string }): string {
  return `club-box-registration\n${proof.deviceId}\n${proof.publicKey}\n${proof.timestamp}\n${proof.serverUrl ?? ''}\n${proof.audience}`
}

/**
 * What a box key signs on a status poll so that a record without a key may adopt it: purpose, the
 * poll's serverId, the public key and a timestamp (within two minutes of the server's clock).
 */
export function boxKeyAdoptionText(proof: { serverId: string; publicKey: string; timestamp: string }): string {
  return `club-box-key-adoption\n${proof.serverId}\n${proof.publicKey}\n${proof.timestamp}`
}

/**
 * What a box key signs for the health report a status poll carries (healthSignature): keySignature
 * covers only the serverId and the time, so without it whoever read a signed poll's query (a
 * proxy's access log) could send its fresh signature with a report of their own (every camera
 * FAILED: the court's players turned away) to a server process that had not taken it yet.
 */
export function boxHealthSignatureText(signed: { serverId: string; timestamp: string; health: string }): string {
  return `club-box-health\n${signed.serverId}\n${signed.timestamp}\n${signed.health}`
}

export const ReplayServerRegistrationRequest = Type.Object(
  {
    deviceId: DeviceId,
    hostname: Type.Optional(Type.String({ maxLength: 255 })),
    version: Type.Optional(Semver),
    displayName: Type.Optional(Type.String({ maxLength: 200 })),
    serverUrl: Type.Optional(HttpUrl),
    localIp: Type.Optional(IpAddress),
    publicKey: Type.Optional(BoxPublicKey),
    keyProof: Type.Optional(
      Type.Object(BoxKeyProof.properties, {
        additionalProperties: false,
        description: 'With publicKey, for a known deviceId: proves the box key, so the registration replaces the old serverId without an admin'
      })
    )
  },
  { additionalProperties: false }
)
export type ReplayServerRegistrationRequest = Static<typeof ReplayServerRegistrationRequest>

export const ReplayServerRegistration = Type.Object({
  serverId: Type.String({ description: "The device's secret for the status call" }),
  status: ReplayServerStatus,
  pollInterval: Type.Integer({ description: 'Recommended polling interval, seconds' }),
  displayName: Type.Optional(Type.String({ description: 'The name the box already has' }))
})
export type ReplayServerRegistration = Static<typeof ReplayServerRegistration>

export const ReplayServerStatusParams = Type.Object({ serverId: Type.String({ minLength: 1, maxLength: 200 }) })
export type ReplayServerStatusParams = Static<typeof ReplayServerStatusParams>

/** A Debian architecture name as `dpkg --print-architecture` says it (amd64, arm64, armhf), or `all`. */
export const Architecture = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9][a-z0-9-]*$', examples: ['amd64', 'arm64', 'all'] })

/**
 * Where a box is with an update: fetching it, waiting until nothing is recorded for someone (no clip
 * export, no event on its courts) or its update window opens, handing it to the installer; or, for
 * the version named with it, put back after it did not come up (ROLLED_BACK) or refused as not what
 * the server signed (FAILED). A version ROLLED_BACK or FAILED is not offered again until the target changes.
 */
export const UpdateState = Type.Enum(['DOWNLOADING', 'WAITING_FOR_IDLE', 'INSTALLING', 'ROLLED_BACK', 'FAILED'])
export type UpdateState = Static<typeof UpdateState>

export const ReplayServerStatusQuery = Type.Object(
  {
    version: Type.Optional(Semver),
    serverUrl: Type.Optional(HttpUrl),
    localIp: Type.Optional(IpAddress),
    architecture: Type.Optional(Architecture),
    updateState: Type.Optional(UpdateState),
    updateVersion: Type.Optional(Semver),
    updateReason: Type.Optional(Type.String({ maxLength: 500, description: 'Why the update was ROLLED_BACK or FAILED' })),
    publicKey: Type.Optional(
      Type.String({
        ...BoxPublicKey,
        description: 'The box key; kept only by a record that has none yet (a box registered before it had one), and only with keyTimestamp and keySignature'
      })
    ),
    keyTimestamp: Type.Optional(DateTime({ description: 'When keySignature was made (ISO 8601, UTC): within two minutes of the server\'s clock' })),
    keySignature: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$', description: 'Ed25519 signature (64 bytes), base64, by publicKey of boxKeyAdoptionText' })
    ),
    healthSignature: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$', description: 'Ed25519 signature (64 bytes), base64, by the box key of boxHealthSignatureText over the serverId, keyTimestamp and health: required with health' })
    ),
    health: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: HEALTH_REPORT_MAX_LENGTH,
        description:
          'The box\'s BoxHealthReport as JSON: sent with the first poll, when a camera\'s state or problem changes, and otherwise at most every few minutes. ' +
          'Kept only from a poll its box key signs. Not JSON or not a BoxHealthReport: 400 naming the field'
      })
    ),
    roundTripMs: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 600_000, description: "The round trip of the box's previous poll, milliseconds: the server measures the box's clock offset from keyTimestamp and half of it" })
    )
  },
  { additionalProperties: false }
)
export type ReplayServerStatusQuery = Static<typeof ReplayServerStatusQuery>

/** A span of time in absolute instants. */
export const Interval = Type.Object({ start: DateTime(), end: DateTime() })
export type Interval = Static<typeof Interval>

const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' })

/** A package the box may fetch (device access token) and must check before installing it. */
export const ReleaseDownload = Type.Object({
  version: Semver,
  architecture: Type.String({ ...Architecture, description: "The package's own Architecture: the box's, or `all`" }),
  path: Type.String({ description: "The package's download path on the server; answers Range requests" }),
  size: Type.Integer({ minimum: 1, description: 'Bytes' }),
  sha256: Sha256Hex,
  signature: Type.String({
    description: "Ed25519 signature, base64, made offline by one of the club's release keys, of the text `club-agent\\n<version>\\n<architecture>\\n<sha256>` (releaseSignedText)"
  })
})
export type ReleaseDownload = Static<typeof ReleaseDownload>

/**
 * What the release key signs for a package: its name, version and architecture with its SHA-256
 * (lower-case hex), one a line. Signing the digest alone let a genuine old package pass as any version.
 */
export function releaseSignedText(release: Pick<ReleaseDownload, 'version' | 'architecture' | 'sha256'>): string {
  return `club-agent\n${release.version}\n${release.architecture}\n${release.sha256}`
}

export const PendingUpdate = Type.Object({
  version: Type.String(),
  release: Type.Optional(
    Type.Object(ReleaseDownload.properties, { description: "The target's package for the box's architecture; absent while the server holds none" })
  ),
  rollback: Type.Optional(
    Type.Object(ReleaseDownload.properties, { description: 'The release of the version the box runs now: what is put back if the new one does not come up' })
  ),
  busy: Type.Optional(
    Type.Array(Interval, {
      maxItems: 10,
      description: 'Events on its courts under way or to come, soonest first: no update from 15 minutes before one until it ends'
    })
  ),
  window: Type.Optional(Type.Object(Interval.properties, { description: "When an update window is set: its current or next opening, as instants" }))
})
export type PendingUpdate = Static<typeof PendingUpdate>

/** A court of the box's area not to be filmed from start to end ("do not film", set by staff). */
export const DoNotFilm = Type.Object({ court: ItemRef, start: DateTime(), end: DateTime() })
export type DoNotFilm = Static<typeof DoNotFilm>

export const ReplayServerStatusAnswer = Type.Object({
  status: ReplayServerStatus,
  accessToken: Type.Optional(Type.String({ description: 'Present only when approved' })),
  area: Type.Optional(ItemRef),
  pendingUpdate: Type.Optional(PendingUpdate),
  config: Type.Optional(ReplayServerConfig),
  replayRequests: Type.Optional(
    Type.Integer({ minimum: 1, description: 'Replays waiting for this box (absent when none): fetch them from the device replay routes' })
  ),
  doNotFilm: Type.Optional(
    Type.Array(DoNotFilm, {
      maxItems: 100,
      description:
        'Intervals under way or to come in which courts of its area are not to be filmed, soonest first (absent when none): ' +
        'the box records no camera that films such a court from start to end, by its own clock'
    })
  ),
  footageTakedowns: Type.Optional(
    Type.Array(FootageTakedownOrder, {
      maxItems: 100,
      description:
        'Footage taken down by staff that this box has not yet confirmed deleting, oldest first (absent when none): the box ' +
        'deletes the segments of every camera filming the court that overlap start to end, then confirms each ' +
        '(PUT /apis/v2/replay-servers/device/footage-takedowns/{id}/deletion)'
    })
  )
})
export type ReplayServerStatusAnswer = Static<typeof ReplayServerStatusAnswer>

/** HH:MM-HH:MM, may run over midnight (22:00-04:00). */
export const UpdateWindow = Type.String({ pattern: '^([01]\\d|2[0-3]):[0-5]\\d-([01]\\d|2[0-3]):[0-5]\\d$', examples: ['02:00-05:00'] })

/**
 * A known deviceId registered again without proving the box key: the record and its serverId go on
 * as they were, and this claim's own serverId polls PENDING (no token, no configuration) until an
 * admin accepts it as the box (it replaces the old serverId) or rejects it (its serverId answers 404).
 */
export const ReplayServerClaim = Type.Object({
  id: Type.String(),
  sourceIp: Type.String({ description: 'The address the registration came from' }),
  keyFingerprint: Nullable(Type.String({ description: "The fingerprint of the key the claimant proved it holds; null: no key, or one it did not prove" })),
  sameKey: Type.Boolean({
    description: "Whether the claim's key is the box's own: only when the box's key changed after the claim was made (such a claim cannot be accepted)"
  }),
  proof: Type.Enum(['NONE', 'REFUSED', 'PROVEN'], {
    description:
      'NONE: no key proof was sent; REFUSED: one was sent and failed (proofProblem says why), the key is not kept; ' +
      'PROVEN: the claimant holds the key keyFingerprint names (another than the box\'s)'
  }),
  proofProblem: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  displayName: Nullable(Type.String()),
  version: Nullable(Type.String()),
  localIp: Nullable(Type.String()),
  serverUrl: Nullable(Type.String()),
  registrations: Type.Integer({ minimum: 1, description: 'How many registrations with this key (or none) this claim stands for' }),
  createdDate: DateTime(),
  updatedDate: DateTime({ description: 'The latest of them' })
})
export type ReplayServerClaim = Static<typeof ReplayServerClaim>

/** A device as an admin sees it. Never carries the serverId or the access token. */
export const ReplayServer = Type.Object({
  id: Type.String(),
  deviceId: Type.String(),
  hostname: Nullable(Type.String()),
  displayName: Nullable(Type.String()),
  status: ReplayServerStatus,
  lastSeenAt: Nullable(DateTime()),
  online: Type.Boolean({ description: 'Seen within three poll intervals' }),
  version: Nullable(Type.String()),
  localIp: Nullable(Type.String()),
  serverUrl: Nullable(Type.String()),
  area: Nullable(ItemRef),
  config: Nullable(ReplayServerConfig),
  targetVersion: Nullable(Semver),
  architecture: Nullable(Type.String({ ...Architecture, description: 'What the box reported (dpkg --print-architecture)' })),
  updateWindow: Nullable(Type.String({ ...UpdateWindow, description: "HH:MM-HH:MM in the club's timezone; null: update when idle" })),
  updateState: Nullable(UpdateState),
  updateVersion: Nullable(Type.String({ ...Semver, description: 'The version updateState is about' })),
  updateReason: Nullable(Type.String()),
  keyFingerprint: Nullable(
    Type.String({ description: "The box key's fingerprint (SHA256:<base64>), as `club-agent setup` and the box's page show it; null: registered without a key" })
  ),
  keyAdoptedDate: Nullable(DateTime({ description: "When a box registered without a key adopted the one its own poll proved; null: it never did" })),
  keyAdoptedFrom: Nullable(Type.String({ description: 'The address that poll came from' })),
  health: Nullable(
    Type.Object(ReplayServerHealth.properties, { description: "What the box last said of its cameras, disk and itself; null before its first report" })
  ),
  claims: Type.Array(ReplayServerClaim, {
    maxItems: 5,
    description: 'Registrations of this deviceId that did not prove the box key, oldest first: pending until an admin accepts or rejects them'
  }),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Type.Object({ self: Type.Object({ href: Type.String() }) })
})
export type ReplayServer = Static<typeof ReplayServer>

export const replayServerDeviceRoutes = defineRoutes({
  register: {
    method: 'POST',
    url: '/apis/v2/replay-servers/device',
    schema: {
      operationId: 'registerReplayServer',
      summary: 'Register a recording box',
      description:
        'No authorization. A new deviceId is a new PENDING record. A known deviceId never changes its record: ' +
        'with a keyProof by the box key the record holds, the answer is a new serverId that replaces the old one and keeps the status ' +
        '(a revoked box goes back to PENDING); otherwise it is a pending claim beside the record (one per deviceId and key, at most five), ' +
        'answered PENDING, which an admin accepts or rejects. The box\'s own key with a proof that fails is no claim: 400 naming why ' +
        '(no proof, the clock is off, a bad signature), 409 for a proof already used; nothing is stored. ' +
        'A malformed publicKey or keyProof is 400. Rate limited per client IP.',
      tags: ['replay-servers'],
      security: noSecurity,
      body: ReplayServerRegistrationRequest,
      response: { 200: ReplayServerRegistration, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody }
    }
  },
  status: {
    method: 'GET',
    url: '/apis/v2/replay-servers/device/:serverId/status',
    schema: {
      operationId: 'getReplayServerStatus',
      summary: "A recording box's status, configuration and token",
      description:
        'No authorization: the serverId is the secret. Records lastSeenAt (to the second) and the reported version, ' +
        'serverUrl and localIp. Answers an ETag; a matching If-None-Match answers 304 with no body. An unknown or ' +
        'superseded serverId answers 404: register again. A box whose record holds a box key is answered only in polls ' +
        'that key signs (publicKey, keyTimestamp, keySignature: boxKeyAdoptionText, within 120 s of the server\'s clock, ' +
        'each signature once); any other poll of it is 401 and changes nothing.',
      tags: ['replay-servers'],
      security: noSecurity,
      params: ReplayServerStatusParams,
      querystring: ReplayServerStatusQuery,
      response: { 200: ReplayServerStatusAnswer, 304: Type.Null(), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody }
    }
  }
})
