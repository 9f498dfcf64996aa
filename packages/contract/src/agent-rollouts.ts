// Staged rollouts of an agent release: the boxes in scope split into groups offered the release one
// group after another, each opening when the one before reached its success threshold, the whole
// halting itself when a group's failures reach the error threshold. A box counts as updated only
// once it runs the version and its cameras have recorded for healthSeconds.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes } from './common.js'
import { Semver } from './replay-servers.js'

/** RUNNING; PAUSED by staff; HALTED by the error threshold; COMPLETED; CANCELLED by staff. */
export const AgentRolloutStatus = Type.Enum(['RUNNING', 'PAUSED', 'HALTED', 'COMPLETED', 'CANCELLED'])
export type AgentRolloutStatus = Static<typeof AgentRolloutStatus>

/**
 * One group as asked for: `{percent}` of the boxes in scope that no canary group names, or `{boxes}`
 * named canaries. Exactly one of the two (checked by the server, which names the group).
 */
export const AgentRolloutGroupInput = Type.Object(
  {
    percent: Type.Optional(
      Type.Number({
        minimum: 0.1,
        maximum: 100,
        description:
          'A share (at least 0.1) of the boxes in scope not named by a canary group. The percent groups must sum to 100; every box lands in exactly one group and a group gets at least one box (see the rollout guide for the rounding)'
      })
    ),
    boxes: Type.Optional(Type.Array(ItemRef, { minItems: 1, maxItems: 1000, description: 'Named canaries: approved boxes in scope, by record id' }))
  },
  { additionalProperties: false }
)
export type AgentRolloutGroupInput = Static<typeof AgentRolloutGroupInput>

export const AgentRolloutCreate = Type.Object(
  {
    version: Type.String({ ...Semver, description: 'An uploaded, signed release (POST /apis/v2/admin/agent-releases)' }),
    groups: Type.Array(AgentRolloutGroupInput, { minItems: 1, maxItems: 20, description: 'Offered one after another, in this order' }),
    errorThresholdPercent: Type.Number({
      minimum: 0,
      maximum: 100,
      description: "Failures, as a share of a group's boxes (at least one box), that halt the whole rollout at once"
    }),
    successThresholdPercent: Type.Optional(
      Type.Number({ minimum: 1, maximum: 100, default: 100, description: "Successes, as a share of a group's boxes, that open the next group" })
    ),
    healthSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        default: 600,
        description: 'A box counts as updated once it runs the version and all its cameras have recorded this long since; 0: the version alone'
      })
    ),
    silentTimeoutMinutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_080,
        default: 60,
        description: "A box offered the release and not heard this long, or running it without its cameras all recording for healthSeconds within this long, counts as failed"
      })
    ),
    area: Type.Optional(Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false, description: "Only this area's approved boxes; none: every approved box" }))
  },
  { additionalProperties: false }
)
export type AgentRolloutCreate = Static<typeof AgentRolloutCreate>

/** WAITING to open; OPEN (its boxes offered the release); COMPLETED (its success threshold reached); HALTED (its error threshold reached). */
export const AgentRolloutGroupStatus = Type.Enum(['WAITING', 'OPEN', 'COMPLETED', 'HALTED'])
export type AgentRolloutGroupStatus = Static<typeof AgentRolloutGroupStatus>

/**
 * A box in a rollout: WAITING for its group; OFFERED the release; UPDATED (runs the version, its
 * cameras watched for healthSeconds); SUCCEEDED; FAILED; EXCLUDED (its own target set by hand, no
 * release for its architecture, or no longer approved).
 */
export const AgentRolloutBoxState = Type.Enum(['WAITING', 'OFFERED', 'UPDATED', 'SUCCEEDED', 'FAILED', 'EXCLUDED'])
export type AgentRolloutBoxState = Static<typeof AgentRolloutBoxState>

export const AgentRolloutBox = Type.Object({
  id: Type.String({ description: "The box's record id" }),
  state: AgentRolloutBoxState,
  reason: Nullable(Type.String({ description: 'Why it FAILED or is EXCLUDED, in words' }))
})
export type AgentRolloutBox = Static<typeof AgentRolloutBox>

const counts = {
  offered: Type.Integer({ minimum: 0, description: 'Boxes offered the release (pending, succeeded and failed)' }),
  succeeded: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  pending: Type.Integer({ minimum: 0, description: 'Offered, neither succeeded nor failed yet' }),
  excluded: Type.Integer({ minimum: 0 })
}

export const AgentRolloutGroup = Type.Object({
  position: Type.Integer({ minimum: 1, description: '1 opens first' }),
  percent: Nullable(Type.Number({ description: 'null: named canaries' })),
  status: AgentRolloutGroupStatus,
  boxes: Type.Array(AgentRolloutBox, { description: 'Fixed when the rollout starts' }),
  ...counts,
  openedDate: Nullable(DateTime()),
  completedDate: Nullable(DateTime())
})
export type AgentRolloutGroup = Static<typeof AgentRolloutGroup>

export const AgentRollout = Type.Object({
  id: Type.String(),
  version: Type.String(),
  status: AgentRolloutStatus,
  area: Nullable(ItemRef),
  errorThresholdPercent: Type.Number(),
  successThresholdPercent: Type.Number(),
  healthSeconds: Type.Integer(),
  silentTimeoutMinutes: Type.Integer(),
  groups: Type.Array(AgentRolloutGroup),
  ...counts,
  haltedReason: Nullable(Type.String({ description: 'HALTED: the group and the failures that halted it' })),
  createdBy: Nullable(ItemRef),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type AgentRollout = Static<typeof AgentRollout>

export const AgentRolloutList = PagedCollection(AgentRollout)
export type AgentRolloutList = Static<typeof AgentRolloutList>

export const AgentRolloutListQuery = Type.Object({ status: Type.Optional(AgentRolloutStatus), ...PageQuery }, { additionalProperties: false })
export type AgentRolloutListQuery = Static<typeof AgentRolloutListQuery>

export const AgentRolloutParams = Type.Object({ id: Type.String({ format: 'uuid' }) })
export type AgentRolloutParams = Static<typeof AgentRolloutParams>

const admin = (operationId: string, summary: string, description: string) => ({
  operationId,
  summary,
  description: `Admin Bearer only. ${description}`,
  tags: ['agent-releases'],
  security: bearerSecurity
})

const transition = (operationId: string, summary: string, description: string) => ({
  method: 'POST' as const,
  schema: {
    ...admin(operationId, summary, description),
    params: AgentRolloutParams,
    response: { 200: AgentRollout, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody }
  }
})

export const agentRolloutRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/admin/agent-rollouts',
    schema: {
      ...admin(
        'createAgentRollout',
        'Roll a release out to the fleet in stages',
        'Splits the approved boxes in scope (of `area` if given) into the groups, fixed from now on, and offers the release to ' +
          'the first group at once. A version that is no release, an unknown box, a box outside the scope, percents not summing ' +
          'to 100 or a threshold out of range: 400 naming the field. A box already in a RUNNING or PAUSED rollout: 409 naming it. ' +
          'A box with its own target version set by hand is shown EXCLUDED and left alone.'
      ),
      body: AgentRolloutCreate,
      response: { 201: AgentRollout, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/admin/agent-rollouts',
    schema: {
      ...admin('listAgentRollouts', 'Rollouts, newest first', 'Paged; `status` filters.'),
      querystring: AgentRolloutListQuery,
      response: { 200: AgentRolloutList, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/admin/agent-rollouts/:id',
    schema: {
      ...admin('getAgentRollout', 'One rollout with its groups', 'Each group with its boxes, their states and its counts.'),
      params: AgentRolloutParams,
      response: { 200: AgentRollout, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
    }
  },
  pause: {
    url: '/apis/v2/admin/agent-rollouts/:id/pause',
    ...transition('pauseAgentRollout', 'Pause a rollout', 'RUNNING → PAUSED: no further group opens; offers already made stand. Another state: 409 naming it.')
  },
  resume: {
    url: '/apis/v2/admin/agent-rollouts/:id/resume',
    ...transition('resumeAgentRollout', 'Resume a paused rollout', 'PAUSED → RUNNING. Another state: 409 naming it.')
  },
  cancel: {
    url: '/apis/v2/admin/agent-rollouts/:id/cancel',
    ...transition(
      'cancelAgentRollout',
      'Cancel a rollout',
      'RUNNING or PAUSED → CANCELLED: boxes not yet running the version are no longer offered it; boxes that run it keep it. Another state: 409 naming it.'
    )
  }
})
