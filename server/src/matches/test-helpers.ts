// Shared steps of the match tests: a court two cameras film, a member with a court pass and a friend
// they bring, the teller as a process runs it, the box making the angles READY.
import type { Test } from 'tap'
import pino from 'pino'
import { userWithToken, type TestApp } from '../test-support/app.js'
import { issued, packageTemplate } from '../packages/test-fixtures.js'
import { camera, putConfig } from '../replay-servers/test-helpers.js'
import { DEVICE, REPLAYS, SHA, filmedVenue, storedClip } from '../replays/test-helpers.js'
import { replayDeps } from '../replays/deps.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { createMailer } from '../password-reset/mailer.js'
import type { Db } from '../db/database.js'
import { makeMatches, matchSettings, runMatchTeller, type MatchDeps } from './service.js'

export const MATCHES = '/apis/v2/matches'
export const REDEEM = '/apis/v2/users/current/redemptions'

export const courtPass = {
  name: 'Court pass',
  type: 'PACKAGE',
  status: 'PUBLISHED',
  data: {
    validityDays: 90,
    items: [
      { type: 'BOOKING', displayName: 'Booking', displayNamePlural: 'Bookings', totalItems: 10 },
      { type: 'GUEST_SIGNUP', displayName: 'Guest pass', displayNamePlural: 'Guest passes', totalItems: 5 },
      { type: 'EVENT_SIGNUP', displayName: 'Event', displayNamePlural: 'Events', totalItems: 5 }
    ]
  }
}

/** The teller as one server process runs it, on `db` (another connection: another process's). */
export async function teller(ctx: TestApp, db: Db = ctx.app.db) {
  const deps: MatchDeps = { replay: replayDeps(ctx.config, ctx.clock, await deviceTokenKey(db, ctx.config, ctx.clock)), settings: matchSettings(ctx.config) }
  const mailer = createMailer(ctx.config, pino({ level: 'silent' }))
  return {
    deps,
    run: () => runMatchTeller({ ...deps, db, mailer: () => mailer, publicBaseUrl: ctx.config.PUBLIC_BASE_URL }),
    make: () => makeMatches(db, deps)
  }
}

/**
 * A court (court1) filmed by two cameras of one box, a member holding a court pass, a friend they
 * bring as a guest, another member and staff; the clock at 10:00 and MATCH_RECORDING=bookings.
 */
export async function setup(t: Test, env: Record<string, string> = {}, from?: string) {
  // Tokens that outlast the hours (and days) the clock is moved on.
  const s = await filmedVenue(t, { MATCH_RECORDING: 'bookings', MATCH_GRACE_SECONDS: '60', ACCESS_TOKEN_TTL_SECONDS: '31536000', ...env })
  const { ctx, admin, boxId, bucket, venue, call } = s
  if (from !== undefined) ctx.clock.set(from)
  const two = await putConfig(ctx, admin, boxId, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id] }), camera('cam-2', { courtIds: [venue.court1.id] })] })
  if (two.statusCode !== 200) throw new Error(two.body)
  const staff = await userWithToken(ctx, 'staff')
  const friend = await userWithToken(ctx, 'member')
  const stranger = await userWithToken(ctx, 'member')
  const pass = await issued(ctx, staff, await packageTemplate(ctx, staff, courtPass), s.member.id)
  const book = async (courtId: string, startDate: string, endDate: string) => {
    const res = await call('POST', REDEEM, s.member, { type: 'BOOKING', target: { booking: { court: { id: courtId }, startDate, endDate } } })
    if (res.statusCode !== 201) throw new Error(`booking: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const bringGuest = async (booking: { startDate: string; endDate: string; courtId: string }) => {
    const res = await call('POST', `/apis/v2/packages/${pass.id}/redemptions`, staff, {
      type: 'GUEST_SIGNUP',
      target: { guest: { name: 'Friend' }, booking: { court: { id: booking.courtId }, startDate: booking.startDate, endDate: booking.endDate } },
      user: { id: friend.id }
    })
    if (res.statusCode !== 201) throw new Error(`guest: ${res.statusCode} ${res.body}`)
  }
  return { ...s, staff, friend, stranger, pass, book, bringGuest, tell: await teller(ctx) }
}

export const at = (ctx: TestApp, iso: string) => ctx.clock.set(iso)
export const matchRows = (db: Db) => db.selectFrom('matches').selectAll().execute()
export const angleRows = (db: Db) => db.selectFrom('replays').selectAll().where('kind', '=', 'MATCH').orderBy('camera_id').execute()

/** The box reports each waiting MATCH angle READY, its clip stored in the bucket. */
export async function boxMakesReady(s: Awaited<ReturnType<typeof setup>>) {
  const waiting = (await s.call('GET', DEVICE, s.device)).json().items.filter((r: { kind: string }) => r.kind === 'MATCH')
  for (const replay of waiting) {
    for (const status of ['EXPORTING', 'UPLOADING']) {
      const res = await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, { status })
      if (res.statusCode !== 200) throw new Error(res.body)
    }
    const location = storedClip(s.bucketDir, `${replay.cameraId}/${replay.id}.mp4`)
    const ready = await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, { status: 'READY', location, durationSeconds: 3600, sizeBytes: 28, sha256: SHA })
    if (ready.statusCode !== 200) throw new Error(ready.body)
  }
  return waiting
}

/** A booking 10:30-11:30 with the friend as its guest, a clip the member asks at 11:00, one a stranger asks at 11:10; the match made at 11:31. */
export async function playedMatch(t: Test, s: Awaited<ReturnType<typeof setup>>) {
  const { ctx, venue, call } = s
  const booking = { courtId: venue.court1.id, startDate: '2026-03-01T10:30:00.000Z', endDate: '2026-03-01T11:30:00.000Z' }
  const redemption = await s.book(booking.courtId, booking.startDate, booking.endDate)
  await s.bringGuest(booking)
  at(ctx, '2026-03-01T11:00:00.000Z')
  const mine = (await call('POST', REPLAYS, s.member, { court: { id: venue.court1.id }, seconds: 30 })).json()
  at(ctx, '2026-03-01T11:10:00.000Z')
  const theirs = (await call('POST', REPLAYS, s.stranger, { court: { id: venue.court1.id }, seconds: 30 })).json()
  at(ctx, '2026-03-01T11:30:59.000Z')
  await s.tell.run()
  t.equal((await matchRows(ctx.app.db)).length, 0, 'not before the grace has passed')
  at(ctx, '2026-03-01T11:31:00.000Z')
  await s.tell.run()
  const [match] = await matchRows(ctx.app.db)
  return { redemption, mine, theirs, match: match!, booking }
}

