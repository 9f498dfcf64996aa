// Scheduled jobs (issue 14): the reference's five webhook receivers, which a scheduler calls and the
// server's own scheduler runs too, and what admins read of them: every run and the daily summaries.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes, type SecurityRequirement } from './common.js'

/** Every job the server runs; the first five have a receiver. */
export const JobName = Type.Enum([
  'court-locking',
  'reminder',
  'summary',
  'users-cleanup',
  'replays-cleanup',
  'membership-charge',
  'membership-grant',
  'packages-expiry'
])
export type JobName = Static<typeof JobName>

export const JobTrigger = Type.Enum(['webhook', 'schedule', 'cli'], { description: 'Who started the run: a receiver, the built-in scheduler or `club jobs run`' })
export type JobTrigger = Static<typeof JobTrigger>

export const JobRunStatus = Type.Enum(['running', 'succeeded', 'failed'])
export type JobRunStatus = Static<typeof JobRunStatus>

export const JobRun = Type.Object({
  id: Type.String(),
  job: JobName,
  trigger: JobTrigger,
  delivery: Nullable(Type.String({ description: 'The webhook-id of the delivery, or the scheduled slot; null when run by hand' })),
  date: DateTime({ description: 'The time the job ran as of' }),
  startedDate: DateTime(),
  finishedDate: Nullable(DateTime()),
  status: JobRunStatus,
  counts: Type.Record(Type.String(), Type.Integer(), { description: 'What the run did: outcome -> count' }),
  note: Nullable(Type.String()),
  error: Nullable(Type.String()),
  _links: Links
})
export type JobRun = Static<typeof JobRun>

export const JobRunListQuery = Type.Object({ ...PageQuery, job: Type.Optional(JobName), status: Type.Optional(JobRunStatus) }, { additionalProperties: false })
export type JobRunListQuery = Static<typeof JobRunListQuery>

/** The optional body of a receiver; no body runs the job as of now. */
export const WebhookRequest = Type.Object(
  { date: Type.Optional(DateTime({ description: 'Run the job as of this time (default now)' })) },
  { additionalProperties: false }
)
export type WebhookRequest = Static<typeof WebhookRequest>

/** Headers of a Standard Webhooks delivery; missing or wrong ones are a 401, not a 400. */
export const WebhookHeaders = Type.Object({
  'webhook-id': Type.String({ description: 'Unique per delivery; a repeated id is answered 201 without running the job again' }),
  'webhook-timestamp': Type.String({ description: 'Unix seconds; more than 5 minutes off the server clock is refused' }),
  'webhook-signature': Type.String({ description: 'v1,<base64 HMAC-SHA256 of "id.timestamp.body">, several space-separated' })
})

export const webhookSecurity: SecurityRequirement[] = [{ webhookSignature: [] }]

const Amount = Type.Object({ count: Type.Integer(), amount: Type.Number({ description: "In the club's currency" }) })

export const SummaryFigures = Type.Object({
  newUsers: Type.Integer(),
  memberships: Type.Object({ sold: Amount, renewed: Amount, failed: Amount, cancelled: Amount }),
  packages: Type.Object({
    sold: Type.Integer({ description: 'Packages bought (source PURCHASE)' }),
    purchaseOrders: Amount,
    redeemed: Type.Integer({ description: 'Redemptions made that day and not cancelled' })
  }),
  recordingBoxes: Type.Object({
    pendingApproval: Type.Integer(),
    notSeenForAnHour: Type.Integer({ description: 'Approved boxes whose last poll is over an hour before the summary was made' })
  }),
  replaysMade: Type.Integer({ description: 'Replays requested that day and delivered (READY, or EXPIRED since)' }),
  failedJobRuns: Type.Integer()
})
export type SummaryFigures = Static<typeof SummaryFigures>

export const Summary = Type.Object({
  id: Type.String(),
  date: Type.String({ format: 'date', description: "The day summed up, in the club's timezone" }),
  timezone: Type.String(),
  currency: Type.String(),
  figures: SummaryFigures,
  text: Type.String(),
  html: Type.String(),
  createdDate: DateTime(),
  _links: Links
})
export type Summary = Static<typeof Summary>

export const SummaryListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type SummaryListQuery = Static<typeof SummaryListQuery>

const receiverDescription = (what: string) =>
  `${what} Called by a scheduler, authenticated with Standard Webhooks (see the webhookSignature scheme): ` +
  'a missing or wrong signature, or a timestamp more than 5 minutes off, is a 401; when the server has no WEBHOOK_SECRET, 503. ' +
  'A repeated webhook-id answers 201 without running again. The optional body `{date}` runs the job as of that time. ' +
  'A failed job answers 500 (its run is recorded as failed) so that the scheduler retries; 409 while another delivery with the same id runs.'

function receiver(url: string, operationId: string, summary: string, what: string) {
  return {
    method: 'POST' as const,
    url,
    schema: {
      operationId,
      summary,
      description: receiverDescription(what),
      tags: ['webhooks'],
      security: webhookSecurity,
      headers: WebhookHeaders,
      body: WebhookRequest,
      response: {
        201: Type.Null({ description: 'Done (or done before)' }),
        400: ErrorBody,
        401: ErrorBody,
        409: ErrorBody,
        500: ErrorBody,
        503: ErrorBody
      }
    }
  }
}

export const webhookRoutes = defineRoutes({
  courtLocking: receiver(
    '/apis/v2/webhooks/events/court-locking',
    'runCourtLockingJob',
    'Lock the places of events about to start; release those of ended ones',
    "From COURT_LOCK_MINUTES before an event starts until it ends, its courts, pods, areas and the event itself answer 409 to changes."
  ),
  reminder: receiver(
    '/apis/v2/webhooks/events/reminder',
    'runReminderJob',
    'Mail the reminders that are due',
    'Renewals within REMINDER_RENEWAL_DAYS, pauses ending within 3 days, packages expiring within REMINDER_PACKAGE_DAYS with items left; each once.'
  ),
  summary: receiver(
    '/apis/v2/webhooks/events/summary',
    'runSummaryJob',
    "Make and mail the summary of the day before",
    "The day before `date` in the club's timezone, once per day, mailed to every admin and kept at GET /apis/v2/admin/summaries."
  ),
  usersCleanup: receiver(
    '/apis/v2/webhooks/users/cleanup',
    'runUserCleanupJob',
    'Delete what is no longer needed; erase accounts past their grace period',
    'Expired codes, nonces, reset tokens, phone verifications and tokens; mail records, job runs and deliveries past RETENTION_DAYS; accounts whose deletion was asked USER_DELETION_GRACE_DAYS ago.'
  ),
  replaysCleanup: receiver(
    '/apis/v2/webhooks/replays/cleanup',
    'runReplayCleanupJob',
    'Delete replays past their retention',
    'Replays older than REPLAY_RETENTION_DAYS lose their clip from the bucket and become EXPIRED, one at a time; a clip the bucket could not delete is left for the next run.'
  )
})

const guarded = { 401: ErrorBody, 403: ErrorBody }

export const jobRunRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/admin/job-runs',
    schema: {
      operationId: 'listJobRuns',
      summary: 'Runs of the scheduled jobs',
      description: 'Admins only. Latest first; filter by job and status.',
      tags: ['jobs'],
      security: bearerSecurity,
      querystring: JobRunListQuery,
      response: { 200: PagedCollection(JobRun), 400: ErrorBody, ...guarded }
    }
  }
})

export const summaryRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/admin/summaries',
    schema: {
      operationId: 'listSummaries',
      summary: 'The daily summaries',
      description: 'Admins only. Latest day first.',
      tags: ['jobs'],
      security: bearerSecurity,
      querystring: SummaryListQuery,
      response: { 200: PagedCollection(Summary), 400: ErrorBody, ...guarded }
    }
  }
})
