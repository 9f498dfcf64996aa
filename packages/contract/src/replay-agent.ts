// The recording box's own local API (served by the agent on the venue network): health, cameras,
// snapshots and replay clip export.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, ItemRef, Nullable, bearerSecurity, defineRoutes, noSecurity } from './common.js'
import { ReplayServerStatus } from './replay-servers.js'

export const AgentCameraState = Type.Enum(['starting', 'recording', 'restarting', 'stalled', 'stopped'])

export const AgentCamera = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String()),
  state: AgentCameraState,
  feed: Type.Enum(['feed', 'feed2'], { description: 'Which of the two feeds is being read' }),
  pid: Nullable(Type.Integer({ description: "The camera's ffmpeg process" })),
  runningSince: Nullable(DateTime()),
  restarts: Type.Integer(),
  lastSegmentAt: Nullable(DateTime({ description: 'When the newest segment last grew' })),
  error: Nullable(Type.String({ description: 'Why the corrections (LUT) cannot be applied; recording goes on' }))
})
export type AgentCamera = Static<typeof AgentCamera>

/** The box's disk as the installer needs it beside freeDiskBytes: what the footage takes, what cleanup keeps. */
export const AgentDisk = Type.Object({
  recordingsBytes: Nullable(Type.Number({ description: "The recorded segments' total size (counted at most every 10 s)" })),
  retentionHours: Type.Number({ description: 'Age after which cleanup deletes footage and clips (retentionHours)' }),
  minFreeBytes: Type.Number({ description: 'Below this free space cleanup deletes oldest first (minFreeDiskMb)' }),
  lastCleanupAt: Nullable(DateTime({ description: 'When cleanup last ran (since the agent started)' })),
  lastCleanupDeleted: Nullable(Type.Integer({ description: 'Files that run deleted' }))
})
export type AgentDisk = Static<typeof AgentDisk>

export const AgentHealth = Type.Object({
  version: Type.String(),
  deviceId: Type.String(),
  keyFingerprint: Type.String({ description: "The box key's fingerprint (SHA256:<base64>): the admin's console shows the same for this box" }),
  hostname: Type.String(),
  displayName: Nullable(Type.String({ description: 'The name the box was configured with (displayName)' })),
  serverUrl: Type.String({ description: 'The server the box registers with and polls' }),
  status: Type.Union([ReplayServerStatus, Type.Literal('UNREGISTERED')]),
  area: Nullable(ItemRef),
  connected: Type.Boolean({ description: 'Whether the last call reached the server' }),
  lastContactAt: Nullable(DateTime()),
  pendingUpdate: Nullable(Type.Object({ version: Type.String() })),
  cleanupEnabled: Type.Boolean(),
  freeDiskBytes: Nullable(Type.Number({ description: 'Free space where the recordings are' })),
  disk: AgentDisk,
  cameras: Type.Array(AgentCamera)
})
export type AgentHealth = Static<typeof AgentHealth>

export const ClipRequest = Type.Object(
  { cameraId: Type.String({ minLength: 1, maxLength: 100 }), start: DateTime(), end: DateTime() },
  { additionalProperties: false }
)
export type ClipRequest = Static<typeof ClipRequest>

export const Clip = Type.Object({
  id: Type.String(),
  cameraId: Type.String(),
  start: DateTime(),
  end: DateTime(),
  duration: Type.Number({ description: 'Seconds, as measured in the written file (postroll included)' }),
  location: Type.String({ description: 'Where the clip was stored (a URL in the bucket)' })
})
export type Clip = Static<typeof Clip>

/** The one answer without a credential: enough for a watchdog, nothing about the box or its cameras. */
export const AgentLiveness = Type.Object({
  status: Type.Literal('ok'),
  recording: Type.Boolean({ description: 'Whether at least one camera is recording now' })
})
export type AgentLiveness = Static<typeof AgentLiveness>

export const LocalSignIn = Type.Object(
  { password: Type.String({ minLength: 1, maxLength: 200, description: 'The password `club-agent local-password` printed' }) },
  { additionalProperties: false }
)
export type LocalSignIn = Static<typeof LocalSignIn>

export const ClipExportJob = Type.Object({
  id: Type.String(),
  cameraId: Type.String(),
  state: Type.Enum(['queued', 'running', 'done', 'failed']),
  position: Nullable(Type.Integer({ minimum: 1, description: 'Place among the waiting exports (1 is the next to start); null once started' })),
  queuedAt: DateTime(),
  startedAt: Nullable(DateTime()),
  finishedAt: Nullable(DateTime()),
  clip: Type.Optional(Clip),
  error: Type.Optional(ErrorBody),
  retryAfterSeconds: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "A failed export refused for now (503: its footage is still being written): the seconds after which to ask again, the synchronous answer's Retry-After"
    })
  )
})
export type ClipExportJob = Static<typeof ClipExportJob>

const credential =
  "Credential: the device's access token as Bearer (the server's calls), or the session cookie of a local sign-in (the installer). "
const authErrors = { 401: ErrorBody }
const JobParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) })

/**
 * The box's routes. Not the platform's API (no /apis/v2 prefix, served by each box on its own port),
 * so deliberately not named like the platform's `...Routes` groups.
 */
export const agentLocalApi = defineRoutes({
  live: {
    method: 'GET',
    url: '/health/live',
    schema: {
      operationId: 'getAgentLiveness',
      summary: 'Whether the agent runs and records; the only route without a credential',
      tags: ['agent'],
      security: noSecurity,
      response: { 200: AgentLiveness, 500: ErrorBody }
    }
  },
  health: {
    method: 'GET',
    url: '/health',
    schema: {
      operationId: 'getAgentHealth',
      summary: "The box's state; never carries the serverId or the token",
      description: credential,
      tags: ['agent'],
      security: bearerSecurity,
      response: { 200: AgentHealth, ...authErrors, 500: ErrorBody }
    }
  },
  cameras: {
    method: 'GET',
    url: '/cameras',
    schema: {
      operationId: 'listAgentCameras',
      summary: 'Every configured camera and its recording state',
      description: credential,
      tags: ['agent'],
      security: bearerSecurity,
      response: { 200: Type.Array(AgentCamera), ...authErrors, 500: ErrorBody }
    }
  },
  snapshot: {
    method: 'GET',
    url: '/cameras/:id/snapshot',
    schema: {
      operationId: 'getAgentCameraSnapshot',
      summary: "A JPEG of the camera's latest recorded frame with its corrections applied",
      description:
        credential +
        'One process per camera at a time: requests arriving while it runs share its picture, and a picture younger ' +
        'than a second is served again. When every decoder of the box is busy (maxDecoders), 429 with Retry-After.',
      tags: ['agent'],
      security: bearerSecurity,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
      response: { ...authErrors, 404: ErrorBody, 422: ErrorBody, 429: ErrorBody }
    }
  },
  exportClip: {
    method: 'POST',
    url: '/clips',
    schema: {
      operationId: 'exportAgentClip',
      summary: 'Cut a replay clip',
      description:
        credential +
        'Exports run one at a time (maxExports) in the order they came. By default the answer waits for the clip (200). ' +
        'With `Prefer: respond-async` (RFC 7240) it is 202 at once with the export job (its place in the queue) and ' +
        'Location: /clips/jobs/{id}. A full queue answers 429 with Retry-After. No footage in the interval answers 404; ' +
        "longer than the box's maximum, 400. An interval reaching into the segment being written is cut up to the " +
        'footage on disk; when none of it is on disk yet, 503 with Retry-After.',
      tags: ['agent'],
      security: bearerSecurity,
      headers: Type.Object({ prefer: Type.Optional(Type.String({ maxLength: 200 })) }),
      body: ClipRequest,
      response: { 200: Clip, 202: ClipExportJob, 400: ErrorBody, ...authErrors, 404: ErrorBody, 422: ErrorBody, 429: ErrorBody, 503: ErrorBody }
    }
  },
  exportJobs: {
    method: 'GET',
    url: '/clips/jobs',
    schema: {
      operationId: 'listAgentClipExports',
      summary: 'Exports running, waiting (in order, each with its place) and recently finished',
      description: credential,
      tags: ['agent'],
      security: bearerSecurity,
      response: { 200: Type.Array(ClipExportJob), ...authErrors }
    }
  },
  exportJob: {
    method: 'GET',
    url: '/clips/jobs/:id',
    schema: {
      operationId: 'getAgentClipExport',
      summary: 'One export: its place in the queue while it waits, its clip or error once finished',
      description: credential,
      tags: ['agent'],
      security: bearerSecurity,
      params: JobParams,
      response: { 200: ClipExportJob, ...authErrors, 404: ErrorBody }
    }
  },
  replayRequests: {
    method: 'POST',
    url: '/replay-requests',
    schema: {
      operationId: 'runAgentReplayRequests',
      summary: 'The server says replays are waiting: the box fetches them from the server now',
      description:
        credential +
        'No body. Answers 202 at once; the box fetches its waiting replays from the server (the same as when a status ' +
        'poll says replayRequests), so a call lost on the way costs only the wait for the next poll.',
      tags: ['agent'],
      security: bearerSecurity,
      response: { 202: Type.Null(), ...authErrors }
    }
  },
  signIn: {
    method: 'POST',
    url: '/session',
    schema: {
      operationId: 'createAgentSession',
      summary: "Sign in with the box's local password; answers a session cookie",
      description:
        'No credential. The cookie is HttpOnly, SameSite=Strict and expires (sessionHours); it is not Secure because ' +
        'the box serves plain http on the venue network. Attempts are limited per client address (429 with ' +
        'Retry-After). A new password (`club-agent local-password` again) ends every session.',
      tags: ['agent'],
      security: noSecurity,
      body: LocalSignIn,
      response: { 204: Type.Null(), 400: ErrorBody, 401: ErrorBody, 429: ErrorBody }
    }
  },
  signOut: {
    method: 'DELETE',
    url: '/session',
    schema: {
      operationId: 'deleteAgentSession',
      summary: 'End this session',
      description: credential,
      tags: ['agent'],
      security: bearerSecurity,
      response: { 204: Type.Null(), ...authErrors }
    }
  }
})
