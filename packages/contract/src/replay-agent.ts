// The recording box's own local API (served by the agent on the venue network): health, cameras,
// snapshots and replay clip export.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, Nullable, bearerSecurity, defineRoutes, noSecurity } from './common.js'
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

export const AgentHealth = Type.Object({
  version: Type.String(),
  deviceId: Type.String(),
  hostname: Type.String(),
  status: Type.Union([ReplayServerStatus, Type.Literal('UNREGISTERED')]),
  connected: Type.Boolean({ description: 'Whether the last call reached the server' }),
  lastContactAt: Nullable(DateTime()),
  pendingUpdate: Nullable(Type.Object({ version: Type.String() })),
  cleanupEnabled: Type.Boolean(),
  freeDiskBytes: Nullable(Type.Number()),
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

/**
 * The box's routes. Not the platform's API (no /apis/v2 prefix, served by each box on its own port),
 * so deliberately not named like the platform's `...Routes` groups.
 */
export const agentLocalApi = defineRoutes({
  health: {
    method: 'GET',
    url: '/health',
    schema: {
      operationId: 'getAgentHealth',
      summary: "The box's state; never carries the serverId or the token",
      tags: ['agent'],
      security: noSecurity,
      response: { 200: AgentHealth, 500: ErrorBody }
    }
  },
  cameras: {
    method: 'GET',
    url: '/cameras',
    schema: {
      operationId: 'listAgentCameras',
      summary: 'Every configured camera and its recording state',
      tags: ['agent'],
      security: noSecurity,
      response: { 200: Type.Array(AgentCamera), 500: ErrorBody }
    }
  },
  snapshot: {
    method: 'GET',
    url: '/cameras/:id/snapshot',
    schema: {
      operationId: 'getAgentCameraSnapshot',
      summary: "A JPEG of the camera's latest recorded frame with its corrections applied",
      tags: ['agent'],
      security: noSecurity,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
      response: { 404: ErrorBody, 422: ErrorBody }
    }
  },
  exportClip: {
    method: 'POST',
    url: '/clips',
    schema: {
      operationId: 'exportAgentClip',
      summary: 'Cut a replay clip',
      description: "Bearer: the device's access token. No footage in the interval answers 404; longer than the box's maximum, 400.",
      tags: ['agent'],
      security: bearerSecurity,
      body: ClipRequest,
      response: { 200: Clip, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 422: ErrorBody }
    }
  }
})
