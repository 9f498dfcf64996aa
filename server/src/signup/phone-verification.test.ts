import t from 'tap'
import { errorOf, testApp, type TestApp } from '../test-support/app.js'

const NUMBER = '+14155552671'

const post = (ctx: TestApp, payload: Record<string, unknown>, remoteAddress = '127.0.0.1') =>
  ctx.app.inject({ method: 'POST', url: '/apis/v2/signup/phone-verifications', payload, remoteAddress })

/** The codes the development provider printed, by session id. */
function loggedCodes(ctx: TestApp): Map<string, string> {
  const codes = new Map<string, string>()
  for (const line of ctx.logs().split('\n').filter(Boolean)) {
    const entry = JSON.parse(line)
    if (entry.msg === 'signup SMS code (development log provider)') codes.set(entry.sessionId, entry.smsCode)
  }
  return codes
}

async function send(ctx: TestApp, phoneNumber = NUMBER) {
  const res = await post(ctx, { phoneNumber })
  if (res.statusCode !== 201) throw new Error(res.body)
  const session = res.json()
  return { session, code: loggedCodes(ctx).get(session.sessionId)! }
}

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0')

t.test('send a code, then verify it', async (t) => {
  const ctx = await testApp(t)
  t.ok(ctx.logs().includes('signup SMS codes are written to the log, not sent. This is for development only'), 'the development provider warns at start')
  const res = await post(ctx, { phoneNumber: NUMBER, language: 'en' })
  t.equal(res.statusCode, 201)
  const session = res.json()
  t.same(session, {
    sessionId: session.sessionId,
    phonePreview: '2671',
    status: 'pending',
    expiresAt: '2026-03-01T10:10:00.000Z',
    remainingAttempts: 5,
    errors: []
  })
  const code = loggedCodes(ctx).get(session.sessionId)!
  t.match(code, /^\d{6}$/)

  const verified = await post(ctx, { sessionId: session.sessionId, verificationCode: code })
  t.equal(verified.statusCode, 201)
  t.match(verified.json(), { sessionId: session.sessionId, status: 'approved', remainingAttempts: 4, errors: [] })

  const again = await post(ctx, { sessionId: session.sessionId, verificationCode: code })
  t.match(again.json(), { status: 'approved', errors: [{ code: 'session_approved' }] }, 'a code works once')

  const rows = await ctx.app.db.selectFrom('phone_verifications').selectAll().execute()
  t.notOk(JSON.stringify(rows).includes(code), 'the code is stored only as an HMAC')
  const carrying = ctx.logs().split('\n').filter((l) => l.includes(code))
  t.equal(carrying.length, 1, 'the code appears only in the development provider line')
  t.match(carrying[0], /development log provider/)
})

t.test('phone numbers must be valid E.164', async (t) => {
  const ctx = await testApp(t)
  for (const phoneNumber of ['abc', '4155552671', '+1 415 555 2671', '+10005551234', '+999123', '+1415555', '']) {
    const res = await post(ctx, { phoneNumber })
    t.equal(res.statusCode, 400, phoneNumber)
    t.match(errorOf(res).message, /phoneNumber/, phoneNumber)
  }
  t.match(errorOf(await post(ctx, {})).message, 'phoneNumber is required')
  t.equal((await post(ctx, { phoneNumber: NUMBER, extra: 1 })).statusCode, 400, 'unknown fields are refused')
})

t.test('wrong codes count down to zero; then even the right code fails', async (t) => {
  const ctx = await testApp(t)
  const { session, code } = await send(ctx)
  for (let left = 4; left >= 0; left--) {
    const res = await post(ctx, { sessionId: session.sessionId, verificationCode: wrong(code) })
    t.equal(res.statusCode, 201, 'a wrong code is an ordinary outcome')
    const body = res.json()
    t.equal(body.remainingAttempts, left)
    t.equal(body.status, left > 0 ? 'pending' : 'max_attempts_reached')
    t.match(body.errors, [{ code: 'invalid_code', details: { remainingAttempts: left } }])
  }
  const right = await post(ctx, { sessionId: session.sessionId, verificationCode: code })
  t.match(right.json(), { status: 'max_attempts_reached', remainingAttempts: 0, errors: [{ code: 'session_max_attempts_reached' }] })
})

t.test('a session expires after 10 minutes; the right code no longer works', async (t) => {
  const ctx = await testApp(t)
  const { session, code } = await send(ctx)
  ctx.clock.advance(10 * 60 * 1000)
  const res = await post(ctx, { sessionId: session.sessionId, verificationCode: code })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { status: 'expired', remainingAttempts: 5, errors: [{ code: 'session_expired' }] })
})

t.test('verify-mode refusals', async (t) => {
  const ctx = await testApp(t)
  const { session } = await send(ctx)
  t.match(errorOf(await post(ctx, { sessionId: session.sessionId, verificationCode: '12345' })).message, 'verificationCode must be 6 digits')
  t.match(errorOf(await post(ctx, { sessionId: session.sessionId, verificationCode: '12345a' })).message, 'verificationCode must be 6 digits')
  const unknown = await post(ctx, { sessionId: 'nope', verificationCode: '123456' })
  t.equal(unknown.statusCode, 404)
  t.match(errorOf(unknown).message, 'phone verification session nope not found')
  t.match(errorOf(await post(ctx, { verificationCode: '123456' })).message, /needs a sessionId/)
  const sdk = await post(ctx, { verificationId: 'abc', phoneNumber: NUMBER, verificationCode: '123456' })
  t.equal(sdk.statusCode, 400)
  t.match(errorOf(sdk).message, /verificationId is accepted only/)
  t.equal((await post(ctx, { sessionId: session.sessionId, verificationCode: '123456' })).json().remainingAttempts, 4, 'refused requests took no attempt')
})

t.test('resend cooldown per number; a new code cancels the earlier session', async (t) => {
  const ctx = await testApp(t)
  const first = await send(ctx)
  const soon = await post(ctx, { phoneNumber: NUMBER })
  t.equal(soon.statusCode, 429)
  t.match(errorOf(soon).message, 'a code was just sent to this number; wait 60 seconds before asking for another')
  t.equal(soon.headers['retry-after'], '60')
  ctx.clock.advance(30_000)
  t.equal((await post(ctx, { phoneNumber: NUMBER })).headers['retry-after'], '30')
  t.equal((await post(ctx, { phoneNumber: '+14155552672' })).statusCode, 201, 'another number is not affected')

  ctx.clock.advance(30_000)
  const second = await send(ctx)
  t.not(second.session.sessionId, first.session.sessionId)
  const old = await post(ctx, { sessionId: first.session.sessionId, verificationCode: first.code })
  t.match(old.json(), { status: 'canceled', errors: [{ code: 'session_canceled' }] })
  t.match((await post(ctx, { sessionId: second.session.sessionId, verificationCode: second.code })).json(), { status: 'approved' })
})

t.test('hourly caps per number and per client IP', async (t) => {
  const ctx = await testApp(t, { PHONE_RESEND_COOLDOWN_SECONDS: '0', PHONE_SENDS_PER_NUMBER_PER_HOUR: '2', PHONE_SENDS_PER_IP_PER_HOUR: '4' })
  t.equal((await post(ctx, { phoneNumber: NUMBER })).statusCode, 201)
  ctx.clock.advance(60_000)
  t.equal((await post(ctx, { phoneNumber: NUMBER })).statusCode, 201)
  const capped = await post(ctx, { phoneNumber: NUMBER })
  t.equal(capped.statusCode, 429)
  t.match(errorOf(capped).message, 'at most 2 codes per hour are sent to one number; try again later')
  t.equal(capped.headers['retry-after'], String(3600 - 60))

  t.equal((await post(ctx, { phoneNumber: '+14155552672' })).statusCode, 201)
  t.equal((await post(ctx, { phoneNumber: '+14155552673' })).statusCode, 201)
  const perIp = await post(ctx, { phoneNumber: '+33612345678' })
  t.equal(perIp.statusCode, 429)
  t.match(errorOf(perIp).message, 'at most 4 codes per hour are sent for one client address; try again later')
  t.equal((await post(ctx, { phoneNumber: '+33612345678' }, '192.0.2.7')).statusCode, 201, 'another client is not affected')

  ctx.clock.advance(3600_000)
  t.equal((await post(ctx, { phoneNumber: NUMBER })).statusCode, 201, 'an hour later the number may get codes again')
})

t.test('checks arriving together take at most the five attempts, and the last one may still approve', async (t) => {
  const ctx = await testApp(t)
  const { session, code } = await send(ctx)
  // Eight at once: every take runs before any outcome is written.
  const guesses = await Promise.all(Array.from({ length: 8 }, () => post(ctx, { sessionId: session.sessionId, verificationCode: wrong(code) })))
  const taken = guesses.filter((r) => r.json().errors[0]?.code === 'invalid_code')
  t.equal(taken.length, 5, 'five attempts taken, no more')
  t.ok(
    guesses.filter((r) => !taken.includes(r)).every((r) => r.json().errors[0]?.code === 'session_max_attempts_reached'),
    'the rest are told no attempts are left'
  )
  const stored = await ctx.app.db.selectFrom('phone_verifications').select(['remaining_attempts', 'status']).executeTakeFirstOrThrow()
  t.same(stored, { remaining_attempts: 0, status: 'max_attempts_reached' })

  // Four wrong guesses at once, then the right code and a sixth guess together: whichever takes the
  // last attempt decides (the order of two requests at once is not promised, and on PostgreSQL it
  // is not their order of arrival), and the other finds nothing left to take.
  const second = await send(ctx, '+14155552672')
  const four = await Promise.all(Array.from({ length: 4 }, () => post(ctx, { sessionId: second.session.sessionId, verificationCode: wrong(second.code) })))
  t.same(four.map((r) => r.json().errors[0]?.code), ['invalid_code', 'invalid_code', 'invalid_code', 'invalid_code'])
  const [right, sixth] = await Promise.all([
    post(ctx, { sessionId: second.session.sessionId, verificationCode: second.code }),
    post(ctx, { sessionId: second.session.sessionId, verificationCode: wrong(second.code) })
  ])
  const final = await ctx.app.db.selectFrom('phone_verifications').select(['status', 'remaining_attempts']).where('id', '=', second.session.sessionId).executeTakeFirstOrThrow()
  t.equal(final.remaining_attempts, 0, 'the fifth attempt was taken once')
  if (right.json().status === 'approved') {
    t.match(right.json(), { status: 'approved', remainingAttempts: 0, errors: [] }, 'the right code took the last attempt and approves')
    t.not(sixth.json().errors[0]?.code, 'invalid_code', 'the sixth finds nothing left to take')
    t.equal(final.status, 'approved', 'and the approval stands')
  } else {
    t.equal(sixth.json().errors[0]?.code, 'invalid_code', 'the sixth took the last attempt')
    t.equal(right.json().errors[0]?.code, 'session_max_attempts_reached', 'the right code found nothing left to take')
    t.equal(final.status, 'max_attempts_reached')
  }
})
