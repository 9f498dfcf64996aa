// Replays: a player asks for the last seconds of a court, the recording box filming it cuts the
// clip and uploads it to the club's bucket, and the player downloads it through a short-lived link.
import Type, { type Static } from 'typebox'
import { AuthErrors, Collection, DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes, noSecurity, scopedSecurity } from './common.js'
import { CameraId } from './replay-servers.js'

export const ReplayStatus = Type.Enum(['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY', 'FAILED', 'EXPIRED', 'TAKEN_DOWN'])
export type ReplayStatus = Static<typeof ReplayStatus>

/**
 * CLIP: the last seconds a player asked for. MATCH: one camera's whole recording of a booking or event
 * (MATCH_RECORDING), one replay per camera filming the court, grouped as a match (GET /apis/v2/matches/{id}).
 */
export const ReplayKind = Type.Enum(['CLIP', 'MATCH'])
export type ReplayKind = Static<typeof ReplayKind>

/** A mark in a match's video: where a replay a participant asked for during the match starts. */
export const Chapter = Type.Object(
  {
    at: Type.Number({ minimum: 0, description: "Seconds from the match's start" }),
    label: Type.String({ minLength: 1, maxLength: 100, description: "What the player sees, e.g. \"Replay 19:42\" (the club's time)" }),
    replay: Type.Optional(Type.Object({ id: Type.String() }, { description: 'The replay asked for then; shown to staff and to the participant who asked' }))
  },
  { additionalProperties: false }
)
export type Chapter = Static<typeof Chapter>

/** Why a replay failed. The box may name others; these are the ones the platform itself knows. */
export const ReplayFailureReason = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[a-z][a-z0-9_]*$',
  description:
    'box_unreachable, redemption_cancelled (its package item was given back), no_footage, recording_ended (the camera stopped recording ' +
    "before the replay's end), camera_error, upload_failed, or another the box names"
})

export const ReplayRequest = Type.Object(
  {
    court: ItemRef,
    seconds: Type.Optional(Type.Integer({ minimum: 1, description: 'How much to cut before `end` (default REPLAY_DEFAULT_SECONDS, at most REPLAY_MAX_SECONDS)' })),
    end: Type.Optional(
      DateTime({ description: "Where the replay ends (default now; not in the future). A member's or guest's within REPLAY_MAX_AGE_SECONDS of now" })
    ),
    cameraId: Type.Optional(CameraId),
    accessReason: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 500,
        pattern: '\\S',
        description: 'Staff and admins only: why they need footage ending more than REPLAY_MAX_AGE_SECONDS ago (required then; recorded in the footage access log)'
      })
    )
  },
  { additionalProperties: false }
)
export type ReplayRequest = Static<typeof ReplayRequest>

export const Replay = Type.Object({
  id: Type.String(),
  kind: ReplayKind,
  status: ReplayStatus,
  reason: Type.Optional(ReplayFailureReason),
  /** The member's; null for a guest's replay (REPLAYS_GUEST). */
  user: Nullable(ItemRef),
  court: ItemRef,
  camera: Type.Object({ id: Type.String() }),
  start: DateTime(),
  end: DateTime(),
  durationSeconds: Nullable(Type.Number({ description: 'As measured in the uploaded file' })),
  sizeBytes: Nullable(Type.Integer()),
  match: Type.Optional(Type.Object({ id: Type.String() }, { description: 'kind MATCH: the match this is one angle of' })),
  chapters: Type.Optional(Type.Array(Chapter, { description: 'kind MATCH: the marks in its video, in order' })),
  downloadUrl: Type.Optional(Type.String({ description: 'When READY: a link valid REPLAY_URL_TTL_SECONDS' })),
  downloadUrlExpiresAt: Type.Optional(DateTime()),
  takedown: Type.Optional(
    Type.Object(
      {
        date: DateTime(),
        by: Type.Optional(Type.Union([ItemRef, Type.Null()], { description: 'Staff and admins only: who took it down; null: from the club command line' })),
        reason: Type.Optional(Type.String({ description: 'Staff and admins only: why, as they typed it' }))
      },
      { description: 'When TAKEN_DOWN: its clip was deleted by staff. The owner sees when; staff and admins also who and why' }
    )
  ),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type Replay = Static<typeof Replay>

export const ReplayCollection = PagedCollection(Replay)
export type ReplayCollection = Static<typeof ReplayCollection>

export const ReplayListQuery = Type.Object(
  {
    court: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A court id' })),
    status: Type.Optional(ReplayStatus),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "A user id (staff only; a member sees their own)" })),
    kind: Type.Optional(ReplayKind),
    ...PageQuery
  },
  { additionalProperties: false }
)
export type ReplayListQuery = Static<typeof ReplayListQuery>

export const ReplayDownloadQuery = Type.Object(
  {
    expires: Type.Integer({ minimum: 0, description: 'Unix time (seconds) after which the link fails' }),
    signature: Type.String({ minLength: 1, maxLength: 200 })
  },
  { additionalProperties: false }
)
export type ReplayDownloadQuery = Static<typeof ReplayDownloadQuery>

/** A waiting replay as the box that must cut it sees it. */
export const DeviceReplay = Type.Object({
  id: Type.String(),
  /** A MATCH is cut after every player's CLIP, at the lowest priority, and uploaded under the box's uploadMaxBytesPerSecond. */
  kind: ReplayKind,
  status: ReplayStatus,
  cameraId: Type.String(),
  start: DateTime(),
  end: DateTime(),
  /** kind MATCH: the chapter marks to write into the clip (MP4 chapters). */
  chapters: Type.Optional(Type.Array(Chapter))
})
export type DeviceReplay = Static<typeof DeviceReplay>

/**
 * The key (below the bucket's prefix) a box stores a replay's clip at, and the only one the server
 * takes as that replay's READY location: a box never names another replay's (or clip's) object.
 */
export function replayClipKey(replay: Pick<DeviceReplay, 'id' | 'cameraId'>): string {
  return `${replay.cameraId}/${replay.id}.mp4`
}

export const DeviceReplayStatusChange = Type.Union([
  Type.Object({ status: Type.Literal('EXPORTING') }, { additionalProperties: false }),
  Type.Object({ status: Type.Literal('UPLOADING') }, { additionalProperties: false }),
  Type.Object(
    {
      status: Type.Literal('READY'),
      location: Type.String({ minLength: 1, maxLength: 2000, pattern: '^(file|s3|gs)://', description: 'Where the clip is stored' }),
      durationSeconds: Type.Number({ minimum: 0 }),
      sizeBytes: Type.Integer({ minimum: 0 }),
      sha256: Type.String({ pattern: '^[0-9a-f]{64}$' })
    },
    { additionalProperties: false }
  ),
  Type.Object({ status: Type.Literal('FAILED'), reason: ReplayFailureReason, message: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false })
])
export type DeviceReplayStatusChange = Static<typeof DeviceReplayStatusChange>

const errors = { 400: ErrorBody, ...AuthErrors, 404: ErrorBody }

export const ReplayTakedownRequest = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'Why it is taken down; kept with the replay, shown to staff' }) },
  { additionalProperties: false }
)
export type ReplayTakedownRequest = Static<typeof ReplayTakedownRequest>

/**
 * The replay routes: a user's key or token (`api` or `replays`), or a court page guest's Bearer token
 * (REPLAYS_GUEST), which carries no scope and is good for these routes only.
 */
const playerSecurity = [...scopedSecurity('replays'), { bearerAuth: [] }]

/** A replay refused at once because the court's cameras do not record (503): the error shape and the camera. */
export const CameraNotRecording = Type.Object(
  {
    ...ErrorBody.properties,
    camera: Type.Object({
      id: Type.String(),
      state: Type.Literal('FAILED'),
      since: DateTime({ description: 'Since when its box says so (the server\'s clock)' })
    })
  },
  { description: 'The error shape, and the camera that does not record' }
)

export const replayRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/replays',
    schema: {
      operationId: 'createReplay',
      summary: 'Ask for a replay of a court',
      description:
        'A member for themself (staff too). The box filming the court is told at once. A member or guest asks for footage ' +
        'ending within REPLAY_MAX_AGE_SECONDS of now (400 naming the limit otherwise); staff and admins may ask for older ' +
        'footage with an `accessReason`, which a member or guest may not send (403). A guest asks only for the court whose page ' +
        'made their session (403). Members are limited to REPLAY_MEMBER_RATE_LIMIT_MAX per hour and REPLAY_COURT_RATE_LIMIT_MAX ' +
        'per court per minute (429 with Retry-After). Every request is written to the footage access log. 402: ' +
        'REPLAYS_REQUIRE_PACKAGE is on and no REPLAY package item is left; 409: no camera films the court (or the named camera does not); ' +
        '503 (with Retry-After, nothing stored, nothing paid): every camera filming the court (or the named one) is FAILED by its box\'s latest report while the box polls, `camera` naming it and since when.',
      tags: ['replays'],
      security: playerSecurity,
      body: ReplayRequest,
      response: { 201: Replay, ...errors, 402: ErrorBody, 409: ErrorBody, 429: ErrorBody, 503: CameraNotRecording }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/replays',
    schema: {
      operationId: 'listReplays',
      summary: 'Replays, newest first: your own, or (staff) anyone\'s',
      tags: ['replays'],
      security: playerSecurity,
      querystring: ReplayListQuery,
      response: { 200: ReplayCollection, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/replays/:id',
    schema: {
      operationId: 'getReplay',
      summary: 'One replay; when READY, with a download link',
      tags: ['replays'],
      security: playerSecurity,
      params: IdParams,
      response: { 200: Replay, ...errors }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/replays/:id',
    schema: {
      operationId: 'deleteReplay',
      summary: 'Remove a replay: its stored clip and its record',
      description:
        'The clip leaves the bucket at once, before the record goes: its download links stop working (502 when the bucket ' +
        'cannot delete it now; nothing changes). A replay taken down by staff keeps its record: 409.',
      tags: ['replays'],
      security: playerSecurity,
      params: IdParams,
      response: { 204: Type.Null(), ...errors, 409: ErrorBody, 502: ErrorBody }
    }
  },
  download: {
    method: 'GET',
    url: '/apis/v2/replays/:id/download',
    schema: {
      operationId: 'getReplayDownload',
      summary: 'The clip of a replay kept in a file:// bucket, by its signed link',
      description:
        'No authorization: the signature is the credential. 403 once expired or when the signature does not match; 404 when ' +
        'the clip is no longer stored, or its location leads out of its bucket (a symbolic link); 410 once taken down. A single ' +
        'byte range (Range: bytes=a-b) is answered 206 with those bytes, so a player seeks in a long clip; 416 outside the clip.',
      tags: ['replays'],
      security: noSecurity,
      params: IdParams,
      querystring: ReplayDownloadQuery,
      response: {
        200: Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'video/mp4' }),
        206: Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'The bytes of the range asked for (Content-Range)' }),
        400: ErrorBody,
        403: ErrorBody,
        404: ErrorBody,
        410: ErrorBody,
        416: ErrorBody
      }
    }
  }
})

export const replayAdminRoutes = defineRoutes({
  takedown: {
    method: 'POST',
    url: '/apis/v2/admin/replays/:id/takedown',
    schema: {
      operationId: 'createReplayTakedown',
      summary: 'Take a replay down: its clip leaves the bucket, the record stays TAKEN_DOWN with who and why',
      description:
        'Staff and admins, any replay. The clip is deleted from the bucket at once (file://, s3:// or gs://), so every ' +
        'download link given out stops working; a replay still being made is stopped (its package item is given back) and ' +
        'a clip the box uploads afterwards is deleted when it reports it. The footage goes with it: its minutes of its court ' +
        'are taken down as POST /apis/v2/admin/courts/{id}/takedowns does (every other replay of them, new requests, the ' +
        "boxes' recordings). 409: taken down already; 502: the bucket could not " +
        'delete the clip now: the replay is TAKEN_DOWN and no link is given out, ask again to delete the clip.',
      tags: ['replays'],
      security: bearerSecurity,
      params: IdParams,
      body: ReplayTakedownRequest,
      response: { 200: Replay, ...errors, 409: ErrorBody, 502: ErrorBody }
    }
  }
})

/** The platform's collection shape, unpaged: a box has a handful of replays waiting at most. */
export const DeviceReplayCollection = Collection(DeviceReplay)
export type DeviceReplayCollection = Static<typeof DeviceReplayCollection>

export const replayDeviceRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/replay-servers/device/replays',
    schema: {
      operationId: 'listDeviceReplays',
      summary: "The replays this box must still cut or upload, oldest first",
      description: "The box's access token as Bearer. REQUESTED, EXPORTING and UPLOADING ones (a box restarted mid-way does them again).",
      tags: ['replay-servers'],
      security: bearerSecurity,
      response: { 200: DeviceReplayCollection, 401: ErrorBody }
    }
  },
  setStatus: {
    method: 'PUT',
    url: '/apis/v2/replay-servers/device/replays/:id/status',
    schema: {
      operationId: 'setDeviceReplayStatus',
      summary: "A replay's progress as the box reports it",
      description:
        'EXPORTING, UPLOADING, READY (with where the clip is) or FAILED (with a reason). A replay already READY, FAILED or ' +
        'EXPIRED is final: 409. So is a replay taken down meanwhile; a clip it reports READY is deleted from the bucket. ' +
        'READY is 400 unless its location is in the box\'s cloudStorageBucket (for file://, where it really is: a symbolic ' +
        'link leading out of the folder is refused, as is a location with no file), and unless it is the replay\'s own key ' +
        'there, `<cameraId>/<id>.mp4` (replayClipKey): a box never reports, and so never makes the server delete, another object.',
      tags: ['replay-servers'],
      security: bearerSecurity,
      params: IdParams,
      body: DeviceReplayStatusChange,
      response: { 200: DeviceReplay, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody }
    }
  }
})

/** A guest's credential for the court page: sent as Bearer to the replay routes, kept on the phone. */
export const ReplayGuestSessionRequest = Type.Object({ court: ItemRef }, { additionalProperties: false })
export type ReplayGuestSessionRequest = Static<typeof ReplayGuestSessionRequest>

export const ReplayGuestSession = Type.Object({
  token: Type.String({ description: 'Opaque; stored hashed. Send it as `Authorization: Bearer <token>` to create, list, read and delete this guest\'s replays' }),
  expiresAt: DateTime({ description: 'REPLAY_GUEST_SESSION_TTL_SECONDS after it was made' })
})
export type ReplayGuestSession = Static<typeof ReplayGuestSession>

export const CourtSignQuery = Type.Object(
  { format: Type.Optional(Type.Enum(['svg', 'pdf'], { description: 'svg (default) or pdf (A5); `Accept: application/pdf` asks for the PDF too' })) },
  { additionalProperties: false }
)
export type CourtSignQuery = Static<typeof CourtSignQuery>

export const replayPageRoutes = defineRoutes({
  createGuestSession: {
    method: 'POST',
    url: '/apis/v2/replays/guest-sessions',
    schema: {
      operationId: 'createReplayGuestSession',
      summary: 'A guest credential for the replays of a court page (REPLAYS_GUEST)',
      description:
        'No authorization: the court page of a club that lets guests in asks for one on a player\'s first tap. 403 when ' +
        'REPLAYS_GUEST is off; 429 past REPLAY_GUEST_ADDRESS_RATE_LIMIT_MAX per hour from one address. A guest\'s replays use ' +
        'no package item and are limited per court and per address.',
      tags: ['replays'],
      security: noSecurity,
      body: ReplayGuestSessionRequest,
      response: { 201: ReplayGuestSession, 400: ErrorBody, 403: ErrorBody, 429: ErrorBody }
    }
  },
  getCourtSign: {
    method: 'GET',
    url: '/apis/v2/admin/courts/:id/sign',
    schema: {
      operationId: 'getCourtSign',
      summary: "A court's printable sign: the club, the court, a QR code of its replay page",
      description:
        'Staff and admins. SVG by default; an A5 PDF with `?format=pdf` or `Accept: application/pdf`. The QR code holds ' +
        '`{PUBLIC_BASE_URL}/r/{courtSlug}`; the line of instructions is in the language `Accept-Language` asks for.',
      tags: ['admin'],
      security: bearerSecurity,
      params: IdParams,
      querystring: CourtSignQuery,
      response: {
        200: Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'image/svg+xml or application/pdf' }),
        400: ErrorBody,
        ...AuthErrors,
        404: ErrorBody
      }
    }
  }
})
