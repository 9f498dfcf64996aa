// A box's problems, told (issue 48): a camera FAILED or RECORDING again, a disk under its floor, a
// clock skewed, as events through the outbox (webhooks and the feed) and mail to the admins. Like
// connectivity.ts, this runs on an interval and finds what differs from what was last told
// (replay_server_health_told); the write is conditional on the value read, so of two processes
// running it at once only one tells a change. A state is told only once it has held for
// HOLD_POLLS poll intervals (by the server's clock, from its `since`): a camera that flaps faster
// than that is never told, and one that flaps slower is told at most once per hold.
import { setImmediate } from 'node:timers/promises'
import type { CameraHealth, EventType } from '@club/contract'
import type { Db } from '../db/database.js'
import { sendOnce } from '../jobs/mail.js'
import type { Mailer } from '../password-reset/mailer.js'
import type { Clock } from '../clock.js'
import type { StoredCamera } from './health.js'
import { ADMIN_PATH, recordReplayServerEvent } from './service.js'

/** How many poll intervals a state must hold before it is told. */
export const HOLD_POLLS = 3

type HealthEventType = Extract<EventType, 'replay_server.camera_failed' | 'replay_server.camera_recovered' | 'replay_server.disk_low' | 'replay_server.clock_skewed'>

/** What is told of each state; OK (a disk or clock set right) is noted, so a relapse is told again, but is no event. */
const EVENTS: Record<string, HealthEventType | null> = {
  FAILED: 'replay_server.camera_failed',
  RECOVERED: 'replay_server.camera_recovered',
  LOW: 'replay_server.disk_low',
  SKEWED: 'replay_server.clock_skewed',
  OK: null
}

/** One change told: the box, what of it (camera:<id>, disk, clock), and the state told. */
export interface HealthTold {
  replayServerId: string
  subject: string
  told: string
  type: HealthEventType
  camera: StoredCamera | null
  since: string
}

interface Candidate {
  subject: string
  /** What would be told now, or null: nothing to tell of this state (STARTING, PAUSED, DISABLED). */
  state: string | null
  /** What counts as told before anything was (a camera never told failed is not told recovered). */
  initially: string
  since: string
  camera: StoredCamera | null
}

function candidatesOf(row: { cameras: string; disk_state: string; disk_since: string; clock_state: string; clock_since: string }): Candidate[] {
  const cameras = (JSON.parse(row.cameras) as StoredCamera[]).map((camera) => ({
    subject: `camera:${camera.id}`,
    state: camera.state === 'FAILED' ? 'FAILED' : camera.state === 'RECORDING' ? 'RECOVERED' : null,
    initially: 'RECOVERED',
    since: camera.since,
    camera
  }))
  return [
    ...cameras,
    { subject: 'disk', state: row.disk_state, initially: 'OK', since: row.disk_since, camera: null },
    { subject: 'clock', state: row.clock_state, initially: 'OK', since: row.clock_since, camera: null }
  ]
}

/** Tells every change that held; answers the events told (for the mail). */
export async function tellHealth(db: Db, now: Date, pollIntervalSeconds: number): Promise<HealthTold[]> {
  const heldSince = new Date(now.getTime() - HOLD_POLLS * pollIntervalSeconds * 1000).toISOString()
  const rows = await db
    .selectFrom('replay_server_health as h')
    .innerJoin('replay_servers', 'replay_servers.id', 'h.replay_server_id')
    .select(['h.replay_server_id', 'h.cameras', 'h.disk_state', 'h.disk_since', 'h.clock_state', 'h.clock_since'])
    .where('replay_servers.status', '=', 'APPROVED')
    .execute()
  const toldRows = await db
    .selectFrom('replay_server_health_told as t')
    .innerJoin('replay_servers', 'replay_servers.id', 't.replay_server_id')
    .select(['t.replay_server_id', 't.subject', 't.told'])
    .where('replay_servers.status', '=', 'APPROVED')
    .execute()
  const told = new Map(toldRows.map((row) => [`${row.replay_server_id} ${row.subject}`, row.told]))
  const result: HealthTold[] = []
  for (const row of rows) {
    for (const candidate of candidatesOf(row)) {
      const last = told.get(`${row.replay_server_id} ${candidate.subject}`)
      if (candidate.state === null || candidate.state === (last ?? candidate.initially) || candidate.since > heldSince) continue
      // A turn of the event loop between changes: each is a transaction of its own (see connectivity.ts).
      await setImmediate()
      const event = EVENTS[candidate.state] ?? null
      const done = await db.transaction().execute(async (tx) => {
        const at = now.toISOString()
        const written =
          last === undefined
            ? await tx
                .insertInto('replay_server_health_told')
                .values({ replay_server_id: row.replay_server_id, subject: candidate.subject, told: candidate.state!, told_at: at })
                .onConflict((oc) => oc.columns(['replay_server_id', 'subject']).doNothing())
                .executeTakeFirst()
                .then((r) => Number(r.numInsertedOrUpdatedRows ?? 0n))
            : await tx
                .updateTable('replay_server_health_told')
                .set({ told: candidate.state!, told_at: at })
                .where('replay_server_id', '=', row.replay_server_id)
                .where('subject', '=', candidate.subject)
                .where('told', '=', last)
                .executeTakeFirst()
                .then((r) => Number(r.numUpdatedRows))
        if (written !== 1) return false
        if (event) await recordReplayServerEvent(tx, row.replay_server_id, event, now, pollIntervalSeconds, { camera: candidate.camera })
        return true
      })
      if (done && event) {
        result.push({ replayServerId: row.replay_server_id, subject: candidate.subject, told: candidate.state, type: event, camera: candidate.camera, since: candidate.since })
      }
    }
  }
  return result
}

export interface HealthMailDeps {
  db: Db
  clock: Clock
  mailer: () => Mailer
  /** PUBLIC_BASE_URL: the console's link in the mail. */
  publicBaseUrl: string
}

/**
 * One run of the teller, as the interval in routes.ts makes it: the changes told, then mailed to
 * the admins unless REPLAY_SERVER_ALERT_MAIL is off. Answers how many were told and mailed.
 */
export async function runHealthTeller(
  deps: HealthMailDeps & { pollIntervalSeconds: number; alertMail: 'on' | 'off' }
): Promise<{ told: number; mailed: number }> {
  const told = await tellHealth(deps.db, deps.clock.now(), deps.pollIntervalSeconds)
  const mailed = deps.alertMail === 'on' ? await mailHealth(deps, told) : 0
  return { told: told.length, mailed }
}

/**
 * Mails every admin each change told, once per change and admin (sendOnce: the told change's
 * subject, state and since make the occurrence). Answers how many mails went.
 */
export async function mailHealth(deps: HealthMailDeps, told: readonly HealthTold[]): Promise<number> {
  if (told.length === 0) return 0
  const admins = await deps.db.selectFrom('users').select(['id', 'email']).where('role', '=', 'admin').where('erased_at', 'is', null).orderBy('created_at').execute()
  const boxes = await deps.db
    .selectFrom('replay_servers')
    .select(['id', 'display_name', 'hostname', 'device_id'])
    .where('id', 'in', [...new Set(told.map((t) => t.replayServerId))])
    .execute()
  const names = new Map(boxes.map((box) => [box.id, box.display_name ?? box.hostname ?? box.device_id]))
  let sent = 0
  for (const change of told) {
    const box = names.get(change.replayServerId) ?? change.replayServerId
    const message = healthMessage(change, box, `${deps.publicBaseUrl.replace(/\/+$/, '')}/console#/boxes/${encodeURIComponent(change.replayServerId)}`)
    for (const admin of admins) {
      const key = {
        kind: 'replay-server-health',
        subjectId: change.replayServerId,
        occurrence: `${change.subject}:${change.told}:${change.since}:${admin.id}`,
        recipientId: admin.id
      }
      if (await sendOnce(deps, key, { to: admin.email, ...message })) sent++
    }
  }
  return sent
}

/**
 * The box's own words (its name, a camera's problem: any text the box sent) on one line: a line
 * break in them would add lines of the box's choosing to the mail (a forged advice, another link).
 */
const oneLine = (text: string): string => text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ')

function healthMessage(change: HealthTold, name: string, link: string): { subject: string; text: string } {
  const camera = change.camera as CameraHealth | null
  const box = oneLine(name)
  const why = camera?.problem ? `: ${oneLine(camera.problem)}` : ''
  const subject = {
    'replay_server.camera_failed': `Camera ${camera?.id} of ${box} does not record${why}`,
    'replay_server.camera_recovered': `Camera ${camera?.id} of ${box} records again`,
    'replay_server.disk_low': `The disk of ${box} is running low`,
    'replay_server.clock_skewed': `The clock of ${box} is off`
  }[change.type]
  const advice = {
    'replay_server.camera_failed': 'Replays of the courts it alone films are refused until it records again. Check its feed and power; the box keeps retrying.',
    'replay_server.camera_recovered': 'Nothing to do.',
    'replay_server.disk_low': 'Old footage is deleted sooner; free space or fit a larger disk.',
    'replay_server.clock_skewed': "Its replays may be cut from the wrong minutes: set the box's clock (NTP)."
  }[change.type]
  return { subject, text: [`${subject} (since ${change.since}).`, '', advice, '', `The box: ${link}`, `(${ADMIN_PATH}/${change.replayServerId})`].join('\n') }
}
