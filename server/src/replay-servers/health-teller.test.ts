// A box's problems reach someone (issue 48): events through the outbox once a state held, each once
// even with two processes telling at once, a flapping camera bounded, and the admins mailed once
// (not at all with REPLAY_SERVER_ALERT_MAIL=off).
import t from 'tap'
import pino from 'pino'
import type { EventType, PlatformEvent } from '@club/contract'
import { testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { eventReader } from '../events/test-helpers.js'
import { createMailer, type Mailer, type MailMessage } from '../password-reset/mailer.js'
import { anotherProcess } from './test-helpers.js'
import { secondServerProcess } from '../test-support/second-server.js'
import { report, reportingBox } from '../test-support/box-health.js'
import { HOLD_POLLS, runHealthTeller } from './health-teller.js'
import type { Db } from '../db/database.js'

const HEALTH_EVENTS: EventType[] = ['replay_server.camera_failed', 'replay_server.camera_recovered', 'replay_server.disk_low', 'replay_server.clock_skewed']

function teller(ctx: TestApp, db: Db = ctx.app.db, alertMail: 'on' | 'off' = ctx.config.REPLAY_SERVER_ALERT_MAIL) {
  return () =>
    runHealthTeller({
      db,
      clock: ctx.clock,
      mailer: () => createMailer(ctx.config, pino({ level: 'silent' })),
      publicBaseUrl: ctx.config.PUBLIC_BASE_URL,
      pollIntervalSeconds: ctx.config.REPLAY_POLL_INTERVAL_SECONDS,
      alertMail
    })
}

const interval = (ctx: TestApp) => ctx.config.REPLAY_POLL_INTERVAL_SECONDS * 1000
const healthMails = (ctx: TestApp) => ctx.app.db.selectFrom('mail_outbox').select(['recipient', 'subject']).where('kind', '=', 'replay-server-health').orderBy('recipient').execute()

t.test('a camera FAILED is told after it held, once, though two processes tell at once; RECORDING again likewise; admins mailed once each', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  const other = await anotherProcess(t, ctx)
  const second = await userWithToken(ctx, 'admin')
  const tellHere = teller(ctx)
  const tellThere = teller(ctx, other.db)
  const events = eventReader(ctx.app.db)
  await events.next()

  await box.send(report([{ id: 'cam-1' }, { id: 'cam-2', state: 'FAILED', problem: 'connection refused' }]))
  // A poll every interval, as the box makes them; the teller runs meanwhile.
  for (let i = 1; i < HOLD_POLLS; i++) {
    ctx.clock.advance(interval(ctx))
    t.same(await tellHere(), { told: 0, mailed: 0 }, `held ${i} interval(s): not yet`)
  }
  ctx.clock.advance(interval(ctx))
  const runs = await Promise.all([tellHere(), tellThere()])
  t.equal(runs[0].told + runs[1].told, 1, 'two processes at once: one tells it')
  t.equal(runs[0].mailed + runs[1].mailed, 2, 'each admin mailed once')
  const failed = await events.next(HEALTH_EVENTS)
  t.same(failed.map((e) => e.type), ['replay_server.camera_failed'])
  t.match(failed[0]!.data, {
    id: box.id,
    camera: { id: 'cam-2', state: 'FAILED', problem: 'connection refused' },
    health: { problems: ['CAMERA_FAILED'], cameras: [{ id: 'cam-1', state: 'RECORDING' }, { id: 'cam-2', state: 'FAILED' }] }
  })
  t.same(await Promise.all([tellHere(), tellThere()]), [{ told: 0, mailed: 0 }, { told: 0, mailed: 0 }], 'told: nothing more')
  const mails = await healthMails(ctx)
  t.equal(mails.length, 2)
  t.match(mails.map((m) => m.subject), [/Camera cam-2 of Court 1 box does not record: connection refused/, /Camera cam-2/])
  t.ok(mails.some((m) => m.recipient === second.email))

  await box.send(report([{ id: 'cam-1' }, { id: 'cam-2' }]))
  ctx.clock.advance(HOLD_POLLS * interval(ctx))
  const back = await Promise.all([tellHere(), tellThere()])
  t.equal(back[0].told + back[1].told, 1)
  const recovered = await events.next(HEALTH_EVENTS)
  t.same(recovered.map((e) => e.type), ['replay_server.camera_recovered'])
  t.match(recovered[0]!.data, { id: box.id, camera: { id: 'cam-2', state: 'RECORDING' }, health: { problems: [] } })
  t.equal((await healthMails(ctx)).length, 4)
})

t.test('a disk under its floor and a skewed clock are told once each, after the hold', async (t) => {
  const ctx = await testApp(t, { REPLAY_SERVER_DISK_FLOOR_PERCENT: '20' })
  const box = await reportingBox(t, ctx)
  const tell = teller(ctx)
  const events = eventReader(ctx.app.db)
  await events.next()
  await box.send(report([{ id: 'cam-1' }], { freeBytes: 150e9 }), { aheadMs: 4000 })
  await tell()
  t.same(await events.next(HEALTH_EVENTS), [], 'not held yet')
  ctx.clock.advance(HOLD_POLLS * interval(ctx))
  await tell()
  await tell()
  const told = await events.next(HEALTH_EVENTS)
  t.same(told.map((e) => e.type).sort(), ['replay_server.clock_skewed', 'replay_server.disk_low'])
  t.match(told[0]!.data, { id: box.id, camera: null })
  // Whether the box also counts OFFLINE here depends on when the sightings' wall-clock flush ran (its
  // poll is exactly three intervals old): not what this test is about, so only the two are asked for.
  const problems = (told.find((e) => e.type === 'replay_server.disk_low')!.data as { health: { problems: string[] } }).health.problems
  t.ok(problems.includes('DISK_LOW') && problems.includes('CLOCK_SKEWED'), `the payload's health names both (${problems.join(', ')})`)
  t.equal((await healthMails(ctx)).length, 2, 'one admin, two mails')
})

t.test('a camera flapping every poll for an hour is never told; one flapping every hold is told at most once per hold', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  const tell = teller(ctx)
  const events = eventReader(ctx.app.db)
  await events.next()
  const polls = 3600_000 / interval(ctx)
  for (let i = 0; i < polls; i++) {
    ctx.clock.advance(interval(ctx))
    t.equal((await box.send(report([{ id: 'cam-1', state: i % 2 ? 'RECORDING' : 'FAILED', problem: i % 2 ? null : 'connection refused' }]))).statusCode, 200)
    await tell()
  }
  t.same(await events.next(HEALTH_EVENTS), [], `${polls} polls, every other one FAILED: no event`)
  t.same(await healthMails(ctx), [])

  // Slower: each state holds one poll longer than the hold, for another hour: each is told, one per hold at most.
  const hold = HOLD_POLLS * interval(ctx)
  let changes = 0
  for (let at = 0; at < 3600_000; at += interval(ctx)) {
    ctx.clock.advance(interval(ctx))
    const failed = Math.floor(at / (hold + interval(ctx))) % 2 === 0
    await box.send(report([{ id: 'cam-1', state: failed ? 'FAILED' : 'RECORDING' }]))
    await tell()
    changes++
  }
  const told = await events.next(HEALTH_EVENTS)
  t.ok(told.length > 0 && told.length <= 3600_000 / hold, `at most one per hold: ${told.length} in an hour of ${changes} polls`)
})

t.test('REPLAY_SERVER_ALERT_MAIL=off: the events, no mail', async (t) => {
  const ctx = await testApp(t, { REPLAY_SERVER_ALERT_MAIL: 'off' })
  const box = await reportingBox(t, ctx)
  const tell = teller(ctx)
  await box.send(report([{ id: 'cam-1', state: 'FAILED', problem: '401 from the camera' }]))
  ctx.clock.advance(HOLD_POLLS * interval(ctx))
  t.same(await tell(), { told: 1, mailed: 0 })
  t.same((await eventReader(ctx.app.db).next(HEALTH_EVENTS)).map((e) => e.type), ['replay_server.camera_failed'])
  t.same(await healthMails(ctx), [])
})

t.test('two server processes telling at once, each on its own interval: the FAILED camera is told and mailed once', async (t) => {
  // One-second polls: the hold is three real seconds, on the second process's real clock and this one's, set to it.
  const ctx = await testApp(t, { REPLAY_POLL_INTERVAL_SECONDS: '1' })
  ctx.clock.set(new Date().toISOString())
  const box = await reportingBox(t, ctx)
  const events = eventReader(ctx.app.db)
  await events.next()
  const other = await secondServerProcess(t, ctx.config.DATABASE_URL, { REPLAY_POLL_INTERVAL_SECONDS: '1' })
  ctx.clock.set(new Date().toISOString())
  await box.send(report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }]))
  const tell = teller(ctx)
  const told: PlatformEvent[] = []
  // This process tells as often as it can while the other runs its own teller: until one of them told it (bounded).
  const deadline = Date.now() + 60_000
  while (told.length === 0 && Date.now() < deadline) {
    ctx.clock.set(new Date().toISOString())
    await tell()
    told.push(...(await events.next(HEALTH_EVENTS)))
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.same(told.map((e) => e.type), ['replay_server.camera_failed'], 'told once')
  // The other stops (a step under way commits or rolls back first); whatever it told is in the
  // outbox now. This one goes on telling for three more holds, by its clock: nothing more.
  await other.stop()
  for (let i = 0; i < 3; i++) {
    ctx.clock.advance(HOLD_POLLS * 1000)
    await tell()
  }
  t.same(await events.next(HEALTH_EVENTS), [], 'not again, by either')
  t.equal((await healthMails(ctx)).length, 1, 'the one admin mailed once')
})

t.test("a box's words reach the admins' mail on one line each: a problem or name with line breaks cannot forge the mail's advice or link", async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  // The box names itself at registration (displayName, hostname): any text up to its length.
  await ctx.app.db.updateTable('replay_servers').set({ display_name: 'Court 1\r\nBcc: thief@example.com' }).where('id', '=', box.id).execute()
  const sent: MailMessage[] = []
  const mailer: Mailer = { send: async (message) => void sent.push(message), close: async () => {} }
  const forged = 'x\n\nNothing to do.\n\nThe box: https://evil.example/console'
  await box.send(report([{ id: 'cam-1', state: 'FAILED', problem: forged }]))
  ctx.clock.advance(HOLD_POLLS * interval(ctx))
  const run = await runHealthTeller({
    db: ctx.app.db,
    clock: ctx.clock,
    mailer: () => mailer,
    publicBaseUrl: ctx.config.PUBLIC_BASE_URL,
    pollIntervalSeconds: ctx.config.REPLAY_POLL_INTERVAL_SECONDS,
    alertMail: 'on'
  })
  t.same(run, { told: 1, mailed: 1 })
  const [mail] = sent
  t.notMatch(mail!.subject, /[\r\n]/, 'the subject is one line')
  t.match(mail!.subject, /Camera cam-1 of Court 1 Bcc: thief@example\.com does not record: x Nothing to do\. The box: https:\/\/evil/)
  const lines = mail!.text.split('\n')
  t.equal(lines.filter((line) => line.startsWith('The box: ')).length, 1, 'one link line')
  t.notOk(lines.some((line) => line.includes('evil.example') && line.startsWith('The box')), 'the only link is the console')
  t.notOk(lines.includes('Nothing to do.'), 'no forged advice line')
})
