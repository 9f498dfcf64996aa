// Replay servers, the admins' side: the fleet list, approval into an area, the target version, a
// camera's snapshot, and the box's device records (replay-servers.ts) as an admin sees them.
import Type, { type Static } from 'typebox'
import { ErrorBody, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes } from './common.js'
import {
  CameraId,
  DeviceId,
  ReplayServer,
  ReplayServerConfig,
  ReplayServerStatus,
  Semver,
  UpdateState,
  UpdateWindow
} from './replay-servers.js'
import { CameraState } from './replay-server-health.js'
import { AgentRolloutStatus } from './agent-rollouts.js'

/** Filters of the admin list. `online`: seen within three poll intervals. */
export const ReplayServerListQuery = Type.Object(
  {
    status: Type.Optional(ReplayServerStatus),
    online: Type.Optional(Type.Boolean({ description: 'Seen within three poll intervals' })),
    deviceId: Type.Optional(DeviceId),
    updateState: Type.Optional(UpdateState),
    health: Type.Optional(
      Type.Enum(['PROBLEM', 'OK'], {
        description: 'PROBLEM: approved boxes with any camera FAILED, the disk under its floor, the clock off by more than 2 s, or offline; OK: approved boxes with none of these'
      })
    ),
    ...PageQuery
  },
  { additionalProperties: false }
)
export type ReplayServerListQuery = Static<typeof ReplayServerListQuery>

export const ReplayServerApproval = Type.Object(
  {
    areaId: Type.String({ minLength: 1, maxLength: 100, description: 'The area the box records' }),
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 }))
  },
  { additionalProperties: false }
)
export type ReplayServerApproval = Static<typeof ReplayServerApproval>

export const ReplayServerTargetVersion = Type.Object(
  {
    version: Nullable(Semver),
    updateWindow: Type.Optional(
      Type.Union([UpdateWindow, Type.Null()], {
        description: "When the box may update, in the club's timezone; null or absent: as soon as it is idle (no export, no event on its courts within 15 minutes)"
      })
    )
  },
  { additionalProperties: false, description: 'The agent version the box should run; null clears it' }
)
export type ReplayServerTargetVersion = Static<typeof ReplayServerTargetVersion>

export const ReplayServerIdParams = Type.Object({ id: Type.String({ format: 'uuid', description: "The record's id (a UUID), not the serverId" }) })
export type ReplayServerIdParams = Static<typeof ReplayServerIdParams>

export const ReplayServerClaimParams = Type.Object({
  id: Type.String({ format: 'uuid', description: "The record's id (a UUID), not the serverId" }),
  claimId: Type.String({ format: 'uuid', description: "The claim's id" })
})
export type ReplayServerClaimParams = Static<typeof ReplayServerClaimParams>

export const ReplayServerCameraParams = Type.Object({
  id: Type.String({ format: 'uuid', description: "The record's id (a UUID), not the serverId" }),
  cameraId: Type.String({ ...CameraId, description: "A camera id of the box's configuration" })
})
export type ReplayServerCameraParams = Static<typeof ReplayServerCameraParams>

/** What the fleet is, at a glance: the console's first page. */
export const FleetSummary = Type.Object({
  boxes: Type.Object({
    total: Type.Integer({ minimum: 0 }),
    byStatus: Type.Record(ReplayServerStatus, Type.Integer({ minimum: 0 }), { description: 'Every status, 0 where none' }),
    online: Type.Integer({ minimum: 0, description: 'Approved boxes seen within three poll intervals' }),
    offline: Type.Integer({ minimum: 0, description: 'Approved boxes not seen within three poll intervals' }),
    withProblems: Type.Integer({ minimum: 0, description: 'Approved boxes the list shows for health=PROBLEM' })
  }),
  cameras: Type.Record(CameraState, Type.Integer({ minimum: 0 }), {
    description: "Cameras of approved boxes by the state their box last reported, every state 0 where none; a box that never reported counts none"
  }),
  versions: Type.Array(Type.Object({ version: Nullable(Type.String()), boxes: Type.Integer({ minimum: 1 }) }), {
    description: 'Agent versions the approved boxes run, most boxes first; null: not reported'
  }),
  rollouts: Type.Array(
    Type.Object({ id: Type.String(), version: Type.String(), status: AgentRolloutStatus, _links: Type.Object({ self: Type.Object({ href: Type.String() }) }) }),
    { description: 'Rollouts RUNNING or PAUSED, newest first' }
  )
})
export type FleetSummary = Static<typeof FleetSummary>

/** A JPEG, sent as it is (image/jpeg); declared for the OpenAPI document, never serialised. */
export const JpegImage = Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'image/jpeg' })

const adminErrors = { 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
const admin = (summary: string, description?: string) => ({
  summary,
  ...(description ? { description } : {}),
  tags: ['replay-servers (admin)'],
  security: bearerSecurity
})

export const replayServerAdminRoutes = defineRoutes({
  fleet: {
    method: 'GET',
    url: '/apis/v2/admin/fleet',
    schema: {
      operationId: 'getFleetSummary',
      ...admin('The fleet at a glance', 'Admin Bearer only. Boxes by status and online, cameras by state, versions with their counts, rollouts running.'),
      response: { 200: FleetSummary, 401: ErrorBody, 403: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/admin/replay-servers',
    schema: {
      operationId: 'listReplayServers',
      ...admin('Recording boxes, filtered and paged, newest first', 'Admin Bearer only. Newest registered first (by creation time). Not in the reference.'),
      querystring: ReplayServerListQuery,
      response: { 200: PagedCollection(ReplayServer), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/admin/replay-servers/:id',
    schema: { operationId: 'getReplayServer', ...admin('One recording box'), params: ReplayServerIdParams, response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors } }
  },
  approve: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/approve',
    schema: {
      operationId: 'approveReplayServer',
      ...admin(
        'Approve a box for an area',
        'Its next status poll answers APPROVED with the area, configuration and access token. An unknown area is 400. ' +
          'Approving an approved box moves it to the given area.'
      ),
      params: ReplayServerIdParams,
      body: ReplayServerApproval,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  reject: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/reject',
    schema: {
      operationId: 'rejectReplayServer',
      ...admin('Reject a box', 'It stays REJECTED, even when it registers again, until an admin approves it.'),
      params: ReplayServerIdParams,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  revoke: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/revoke',
    schema: {
      operationId: 'revokeReplayServer',
      ...admin('Revoke a box', 'Its access token stops working at once; its polls answer REVOKED.'),
      params: ReplayServerIdParams,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  rotateToken: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/rotate-token',
    schema: {
      operationId: 'rotateReplayServerToken',
      ...admin('Rotate the access token', 'The old token stops working at once; the box receives the new one with its next poll.'),
      params: ReplayServerIdParams,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/admin/replay-servers/:id',
    schema: {
      operationId: 'deleteReplayServer',
      ...admin('Forget a box', 'Its serverId answers 404, so the box registers again as a new PENDING device.'),
      params: ReplayServerIdParams,
      response: { 204: Type.Null(), 400: ErrorBody, ...adminErrors }
    }
  },
  setConfig: {
    method: 'PUT',
    url: '/apis/v2/admin/replay-servers/:id/config',
    schema: {
      operationId: 'setReplayServerConfig',
      ...admin(
        "Replace a box's configuration",
        'The body is the configuration itself. Camera ids must be unique. A bad configuration is a 400 naming the field ' +
          'and the stored configuration is unchanged.'
      ),
      params: ReplayServerIdParams,
      body: ReplayServerConfig,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  cameraSnapshot: {
    method: 'GET',
    url: '/apis/v2/admin/replay-servers/:id/cameras/:cameraId/snapshot',
    schema: {
      operationId: 'getReplayServerCameraSnapshot',
      ...admin(
        "A camera's picture as it is now, asked of the box",
        "Admin or staff Bearer. The server asks the box at its reported serverUrl, with the box's access token " +
          '(never in a URL or a log), and answers its JPEG; only when that URL resolves to the address the box polls ' +
          'from, or to one inside BOX_NETWORKS. 404: no such box or camera; 409: the box is not approved or has reported ' +
          'no serverUrl; 502: no picture, whatever the cause (an address the box may not own, no connection, an answer ' +
          'that is not image/jpeg, a redirect), always the same message; 504: no picture within REPLAY_SNAPSHOT_TIMEOUT_MS.'
      ),
      params: ReplayServerCameraParams,
      response: { 200: JpegImage, 400: ErrorBody, ...adminErrors, 409: ErrorBody, 502: ErrorBody, 504: ErrorBody }
    }
  },
  approveClaim: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/claims/:claimId/approve',
    schema: {
      operationId: 'approveReplayServerClaim',
      ...admin(
        'Accept a claim as the box',
        "The claim's serverId replaces the box's: the old serverId answers 404 and its token fails at once; the new one " +
          'polls with the same status, area and configuration and a new token (a revoked box goes back to PENDING). The key, ' +
          "hostname, version and addresses the claim reported become the box's. Other claims stay. 404: no such box or claim " +
          '(a claim registered again since it was shown has a new id: look again); 409: the claim carries the box\'s own key ' +
          '(the box proves that key by itself, so such a claim is not the box).'
      ),
      params: ReplayServerClaimParams,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors, 409: ErrorBody }
    }
  },
  rejectClaim: {
    method: 'POST',
    url: '/apis/v2/admin/replay-servers/:id/claims/:claimId/reject',
    schema: {
      operationId: 'rejectReplayServerClaim',
      ...admin('Reject a claim', "The claim is forgotten and its serverId answers 404; the box is unchanged. 404: no such box or claim."),
      params: ReplayServerClaimParams,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  },
  setTargetVersion: {
    method: 'PUT',
    url: '/apis/v2/admin/replay-servers/:id/target-version',
    schema: {
      operationId: 'setReplayServerTargetVersion',
      ...admin(
        'Set the agent version a box should run',
        'While it differs from the version the box reports, its status answers pendingUpdate with the release to fetch. ' +
          "A version with no release for the box's architecture, or with build metadata (+…), is 400. A new target clears a ROLLED_BACK or FAILED state."
      ),
      params: ReplayServerIdParams,
      body: ReplayServerTargetVersion,
      response: { 200: ReplayServer, 400: ErrorBody, ...adminErrors }
    }
  }
})
