// A recording box's health: what the box says of its cameras, its disk and itself in its status
// poll (BoxHealthReport, box's side), and what an admin reads of it (ReplayServerHealth) and of the
// whole fleet (FleetSummary). A box that polls is online; a box whose cameras record is healthy,
// and only the box can tell: the server keeps its latest word and a bounded history of changes.
import Type, { type Static } from 'typebox'
import { CameraId, DateTime, Nullable } from './common.js'

/**
 * What a camera is doing, by the box's account:
 * RECORDING: ffmpeg writes its segments; STARTING: ffmpeg was (re)started and has written no segment
 * yet; FAILED: it does not record and the box keeps retrying (`problem` says why); PAUSED: a
 * do-not-film interval covers every court it films; DISABLED: `isEnabled: false` in the configuration.
 */
export const CameraState = Type.Enum(['RECORDING', 'STARTING', 'FAILED', 'PAUSED', 'DISABLED'])
export type CameraState = Static<typeof CameraState>

/** A problem in words, summarised from ffmpeg's reason ("connection refused", "401 from the camera"). */
const Problem = Type.String({ maxLength: 200 })

export const CameraHealthReport = Type.Object(
  {
    id: CameraId,
    state: CameraState,
    lastSegmentAt: Nullable(DateTime({ description: "When its last segment was finished, by the box's clock; null: none yet" })),
    restarts: Type.Integer({ minimum: 0, maximum: 100_000, description: 'How often ffmpeg was restarted for it in the last hour' }),
    problem: Nullable(Problem)
  },
  { additionalProperties: false }
)
export type CameraHealthReport = Static<typeof CameraHealthReport>

const Bytes = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const DiskHealth = Type.Object(
  {
    freeBytes: Bytes,
    totalBytes: Bytes,
    recordingsBytes: Type.Integer({ ...Bytes, description: "The recordings' own bytes" }),
    hoursKept: Nullable(
      Type.Number({ minimum: 0, maximum: 1_000_000, description: 'How many hours of footage the disk holds at the current rate of every camera recording; null: nothing records' })
    )
  },
  { additionalProperties: false }
)
export type DiskHealth = Static<typeof DiskHealth>

/**
 * What a box reports of itself, as JSON in its status poll's `health` query parameter: with the
 * first poll, whenever a camera's state or problem changes, and otherwise at most every few
 * minutes, so that a poll of a box that is fine carries nothing and stays the cached read.
 */
export const BoxHealthReport = Type.Object(
  {
    cameras: Type.Array(CameraHealthReport, { maxItems: 64 }),
    disk: DiskHealth,
    temperatureCelsius: Nullable(Type.Number({ minimum: -100, maximum: 250, description: 'Where the hardware reports one (CPU package)' })),
    memoryBytes: Type.Integer({ ...Bytes, description: "The agent's resident memory" }),
    uptimeSeconds: Type.Integer({ minimum: 0, maximum: 100 * 365 * 86_400, description: "The agent's" })
  },
  { additionalProperties: false }
)
export type BoxHealthReport = Static<typeof BoxHealthReport>

/** The longest `health` query parameter a poll may carry (characters of JSON). */
export const HEALTH_REPORT_MAX_LENGTH = 16_000

/** What makes a box a problem (the list's `health=PROBLEM`). */
export const HealthProblem = Type.Enum(['CAMERA_FAILED', 'DISK_LOW', 'CLOCK_SKEWED', 'OFFLINE'])
export type HealthProblem = Static<typeof HealthProblem>

/** A box's clock may be this far from the server's before it is CLOCK_SKEWED (seconds). */
export const CLOCK_SKEW_LIMIT_SECONDS = 2

export const CameraHealth = Type.Object({
  id: Type.String(),
  state: CameraState,
  since: DateTime({ description: "When the server first heard of this state (its clock)" }),
  lastSegmentAt: Nullable(DateTime({ description: "By the box's clock" })),
  restarts: Type.Integer({ minimum: 0, description: 'Restarts in the hour before reportedAt' }),
  problem: Nullable(Type.String())
})
export type CameraHealth = Static<typeof CameraHealth>

/** A box's health as an admin sees it; null on the box before its first report. */
export const ReplayServerHealth = Type.Object({
  reportedAt: DateTime({ description: 'When the latest report arrived (the server\'s clock)' }),
  cameras: Type.Array(CameraHealth),
  disk: DiskHealth,
  clockOffsetSeconds: Nullable(
    Type.Number({
      description:
        "The box's clock minus the server's, measured by the server from the poll's signed timestamp and its receipt, corrected by half the round trip the box reports; null: not measured yet"
    })
  ),
  temperatureCelsius: Nullable(Type.Number()),
  memoryBytes: Type.Integer({ minimum: 0 }),
  uptimeSeconds: Type.Integer({ minimum: 0 }),
  problems: Type.Array(HealthProblem, { description: 'Empty when the box is fine' })
})
export type ReplayServerHealth = Static<typeof ReplayServerHealth>
