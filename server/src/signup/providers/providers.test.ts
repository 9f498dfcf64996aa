import { pino } from 'pino'
import t from 'tap'
import { loadConfig } from '../../config.js'
import { errorOf, testApp, type TestApp } from '../../test-support/app.js'
import { createPhoneProvider } from './index.js'
import { FIREBASE_API_KEY, TWILIO, fakeFirebase, fakeTwilio, stopServer } from '../../test-support/fake-sms-providers.js'

const NUMBER = '+14155552671'

const post = (ctx: TestApp, payload: Record<string, unknown>) =>
  ctx.app.inject({ method: 'POST', url: '/apis/v2/signup/phone-verifications', payload })

async function twilioApp(t: Parameters<typeof testApp>[0], fakeOptions: Parameters<typeof fakeTwilio>[1] = {}, env: Record<string, string> = {}) {
  const twilio = await fakeTwilio(t, fakeOptions)
  const ctx = await testApp(t, {
    PHONE_VERIFICATION_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: TWILIO.accountSid,
    TWILIO_AUTH_TOKEN: TWILIO.authToken,
    TWILIO_VERIFY_SERVICE_SID: TWILIO.serviceSid,
    TWILIO_VERIFY_BASE_URL: twilio.baseUrl,
    PHONE_RESEND_COOLDOWN_SECONDS: '0',
    ...env
  })
  return { twilio, ctx }
}

async function firebaseApp(t: Parameters<typeof testApp>[0], fakeOptions: Parameters<typeof fakeFirebase>[1] = {}, env: Record<string, string> = {}) {
  const firebase = await fakeFirebase(t, fakeOptions)
  const ctx = await testApp(t, {
    PHONE_VERIFICATION_PROVIDER: 'firebase',
    FIREBASE_API_KEY,
    FIREBASE_IDENTITY_TOOLKIT_BASE_URL: firebase.baseUrl,
    PHONE_RESEND_COOLDOWN_SECONDS: '0',
    ...env
  })
  return { firebase, ctx }
}

t.test('twilio: Twilio sends the code; the session maps to its verification and approves', async (t) => {
  const { twilio, ctx } = await twilioApp(t, { code: '424242' })
  const sent = await post(ctx, { phoneNumber: NUMBER, language: 'fr' })
  t.equal(sent.statusCode, 201)
  const session = sent.json()
  t.match(session, { phonePreview: '2671', status: 'pending', remainingAttempts: 5, errors: [] })
  const form = new URLSearchParams(twilio.requests[0]!.body)
  t.same(Object.fromEntries(form), { To: NUMBER, Channel: 'sms', Locale: 'fr' })
  t.equal(twilio.requests[0]!.headers['content-type'], 'application/x-www-form-urlencoded')

  const wrong = await post(ctx, { sessionId: session.sessionId, verificationCode: '000000' })
  t.match(wrong.json(), { status: 'pending', remainingAttempts: 4, errors: [{ code: 'invalid_code' }] })
  const right = await post(ctx, { sessionId: session.sessionId, verificationCode: '424242' })
  t.match(right.json(), { status: 'approved', remainingAttempts: 3, errors: [] })
  const check = new URLSearchParams(twilio.requests.at(-1)!.body)
  t.equal(check.get('Code'), '424242')
  t.match(check.get('VerificationSid'), /^VE[0-9a-f]{32}$/)

  const rows = await ctx.app.db.selectFrom('phone_verifications').selectAll().execute()
  t.equal(rows[0]!.code_hash, null, 'the provider owns the code; this server keeps none')
  const logs = ctx.logs()
  t.notOk(logs.includes('424242'), 'the code is not logged')
  t.notOk(logs.includes(TWILIO.authToken), 'the auth token is not logged')
  t.notOk(/signup SMS codes are written to the log/.test(logs), 'no development warning with a real provider')
})

t.test("twilio: a verification Twilio no longer has (404) ends the session as expired", async (t) => {
  const { twilio, ctx } = await twilioApp(t)
  const session = (await post(ctx, { phoneNumber: NUMBER })).json()
  twilio.verifications.clear()
  const res = await post(ctx, { sessionId: session.sessionId, verificationCode: '424242' })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { status: 'expired', errors: [{ code: 'session_expired' }] })
})

t.test("twilio: Twilio's max check attempts (60202) ends the session", async (t) => {
  const { twilio, ctx } = await twilioApp(t)
  const session = (await post(ctx, { phoneNumber: NUMBER })).json()
  twilio.verifications.forEach((v) => (v.checks = 5))
  const res = await post(ctx, { sessionId: session.sessionId, verificationCode: '424242' })
  t.match(res.json(), { status: 'max_attempts_reached', remainingAttempts: 0 })
})

t.test('twilio: refusals and failures of the provider', async (t) => {
  const { twilio, ctx } = await twilioApp(t, { invalidNumbers: ['+14155552672'] }, { PHONE_SENDS_PER_NUMBER_PER_HOUR: '50' })
  const invalid = await post(ctx, { phoneNumber: '+14155552672' })
  t.equal(invalid.statusCode, 400)
  t.match(errorOf(invalid).message, /refused by the SMS provider/)

  for (let i = 0; i < 5; i++) t.equal((await post(ctx, { phoneNumber: NUMBER })).statusCode, 201)
  const tooMany = await post(ctx, { phoneNumber: NUMBER })
  t.equal(tooMany.statusCode, 429, "Twilio's 60203 is a 429")
  t.match(errorOf(tooMany).message, /refuses more codes to this number/)

  const session = (await ctx.app.db.selectFrom('phone_verifications').selectAll().where('status', '=', 'pending').executeTakeFirstOrThrow())
  twilio.state.failWith = 503
  const down = await post(ctx, { sessionId: session.id, verificationCode: '424242' })
  t.equal(down.statusCode, 502)
  t.equal(errorOf(down).message, 'the SMS provider failed; try again later')
  twilio.state.failWith = 0
  const after = await post(ctx, { sessionId: session.id, verificationCode: '000000' })
  t.equal(after.json().remainingAttempts, 4, 'an attempt the provider did not judge is given back')
  t.ok(ctx.logs().includes('"providerCode":20500'), 'the operator sees the provider error code')
})

t.test('twilio: wrong credentials and an unreachable provider are 502', async (t) => {
  const { ctx } = await twilioApp(t, {}, { TWILIO_AUTH_TOKEN: 'not-the-token' })
  const res = await post(ctx, { phoneNumber: NUMBER })
  t.equal(res.statusCode, 502)
  t.equal(errorOf(res).message, "the SMS provider refused this server's credentials")
  t.notOk(ctx.logs().includes('not-the-token'))
  t.equal((await post(ctx, { phoneNumber: NUMBER })).statusCode, 502, 'a failed send does not count against the cooldown or caps')

  const { twilio, ctx: ctx2 } = await twilioApp(t)
  await stopServer(twilio.server)
  const unreachable = await post(ctx2, { phoneNumber: NUMBER })
  t.equal(unreachable.statusCode, 502)
  t.equal(errorOf(unreachable).message, 'the SMS provider could not be reached; try again later')
})

t.test('a provider without its credentials stops the server at start, naming them', async (t) => {
  const log = pino({ level: 'silent' })
  t.throws(() => createPhoneProvider(loadConfig({ PHONE_VERIFICATION_PROVIDER: 'twilio', TWILIO_ACCOUNT_SID: TWILIO.accountSid }), log), {
    name: 'ConfigError',
    message: 'PHONE_VERIFICATION_PROVIDER=twilio needs TWILIO_AUTH_TOKEN, TWILIO_VERIFY_SERVICE_SID'
  })
  t.throws(() => createPhoneProvider(loadConfig({ PHONE_VERIFICATION_PROVIDER: 'firebase' }), log), {
    message: 'PHONE_VERIFICATION_PROVIDER=firebase needs FIREBASE_API_KEY'
  })
})

t.test('firebase: the reCAPTCHA token goes with the send, the code is checked by Firebase', async (t) => {
  const { firebase, ctx } = await firebaseApp(t, { code: '135790' })
  const noCaptcha = await post(ctx, { phoneNumber: NUMBER })
  t.equal(noCaptcha.statusCode, 400)
  t.equal(errorOf(noCaptcha).message, 'recaptchaToken is required to send a code')
  t.equal(firebase.requests.length, 0)

  const sent = await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'good', language: 'de' })
  t.equal(sent.statusCode, 201)
  const request = firebase.requests[0]!
  t.equal(request.url, '/v1/accounts:sendVerificationCode', 'the API key is not in the URL')
  t.equal(request.headers['x-goog-api-key'], FIREBASE_API_KEY)
  t.equal(request.headers['x-firebase-locale'], 'de')
  t.same(JSON.parse(request.body), { phoneNumber: NUMBER, recaptchaToken: 'good' })

  const session = sent.json()
  t.match((await post(ctx, { sessionId: session.sessionId, verificationCode: '111111' })).json(), {
    status: 'pending',
    remainingAttempts: 4,
    errors: [{ code: 'invalid_code' }]
  })
  t.match((await post(ctx, { sessionId: session.sessionId, verificationCode: '135790' })).json(), { status: 'approved' })
  t.notOk(ctx.logs().includes(FIREBASE_API_KEY), 'the API key is not logged')
  t.notOk(ctx.logs().includes('135790'), 'the code is not logged')
})

t.test("firebase: the SDK's verificationId with the phone number and code", async (t) => {
  const { firebase, ctx } = await firebaseApp(t)
  await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'good' })
  const sessionInfo = [...firebase.sessions.keys()][0]!
  const sdk = await post(ctx, { verificationId: sessionInfo, phoneNumber: NUMBER, verificationCode: '135790' })
  t.equal(sdk.statusCode, 201)
  t.match(sdk.json(), { status: 'approved', phonePreview: '2671' })

  await post(ctx, { phoneNumber: '+14155552672', recaptchaToken: 'good' })
  const other = [...firebase.sessions.keys()][1]!
  const wrongNumber = await post(ctx, { verificationId: other, phoneNumber: '+14155552673', verificationCode: '135790' })
  t.equal(wrongNumber.statusCode, 400)
  t.equal(errorOf(wrongNumber).message, 'phoneNumber is not the number of this verification')

  const unknown = await post(ctx, { verificationId: 'made-up', phoneNumber: NUMBER, verificationCode: '135790' })
  t.equal(unknown.statusCode, 400)
  t.equal(errorOf(unknown).message, 'verificationId is not a verification the SMS provider knows')

  // A verificationId this server never saw: Firebase reports a different number than claimed.
  firebase.sessions.set('sdk-only', { phoneNumber: '+14155552673', code: '135790' })
  firebase.state.phoneNumberOverride = '+14155552673'
  const claimed = await post(ctx, { verificationId: 'sdk-only', phoneNumber: NUMBER, verificationCode: '135790' })
  t.equal(claimed.statusCode, 400)
  t.equal(errorOf(claimed).message, 'the verification belongs to another phone number')
})

t.test("firebase: the provider's refusals and failures", async (t) => {
  const { firebase, ctx } = await firebaseApp(t, { invalidNumbers: ['+14155552672'] })
  const captcha = await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'bad' })
  t.equal(captcha.statusCode, 400)
  t.equal(errorOf(captcha).message, 'recaptchaToken was refused: solve the reCAPTCHA again')
  const invalid = await post(ctx, { phoneNumber: '+14155552672', recaptchaToken: 'good' })
  t.equal(invalid.statusCode, 400)
  t.match(errorOf(invalid).message, /phoneNumber was refused/)
  const quota = await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'quota' })
  t.equal(quota.statusCode, 429)

  const session = (await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'good' })).json()
  firebase.state.expired.add([...firebase.sessions.keys()][0]!)
  t.match((await post(ctx, { sessionId: session.sessionId, verificationCode: '135790' })).json(), { status: 'expired' })

  firebase.state.failWith = 500
  const down = await post(ctx, { phoneNumber: '+14155552673', recaptchaToken: 'good' })
  t.equal(down.statusCode, 502)
})

t.test('firebase: a wrong API key is a 502 and is not logged', async (t) => {
  const { ctx } = await firebaseApp(t, {}, { FIREBASE_API_KEY: 'wrong-key-123' })
  const res = await post(ctx, { phoneNumber: NUMBER, recaptchaToken: 'good' })
  t.equal(res.statusCode, 502)
  t.notOk(ctx.logs().includes('wrong-key-123'))
})

t.test('twilio: two checks at once each cost an attempt, whatever order they finish in', async (t) => {
  const { twilio, ctx } = await twilioApp(t, { code: '424242' })
  const sent = await post(ctx, { phoneNumber: NUMBER })
  const sessionId = sent.json().sessionId
  let release!: () => void
  twilio.state.holdNextCheck = new Promise<void>((resolve) => (release = resolve))
  const first = post(ctx, { sessionId, verificationCode: '000001' })
  // The second check starts after the first took its attempt, and finishes before it.
  await new Promise((resolve) => setImmediate(resolve))
  while (twilio.state.holdNextCheck !== null) await new Promise((resolve) => setImmediate(resolve))
  const second = await post(ctx, { sessionId, verificationCode: '000002' })
  t.equal(second.json().remainingAttempts, 3)
  release()
  t.equal((await first).json().remainingAttempts, 3, 'the later answer reports the count as it stands')
  const row = await ctx.app.db.selectFrom('phone_verifications').select('remaining_attempts').where('id', '=', sessionId).executeTakeFirstOrThrow()
  t.equal(row.remaining_attempts, 3, 'the earlier check finishing last does not give an attempt back')
})

t.test('one session per Firebase verification; Twilio may reuse a verification across resends', async (t) => {
  // Two verify calls racing with one new verificationId both try to insert its session: the
  // database keeps one, and the service reads back whichever won (onConflict doNothing).
  const { firebase, ctx } = await firebaseApp(t)
  firebase.sessions.set('sdk-new', { phoneNumber: NUMBER, code: '135790' })
  const first = await post(ctx, { verificationId: 'sdk-new', phoneNumber: NUMBER, verificationCode: '000000' })
  t.equal(first.statusCode, 201)
  const row = await ctx.app.db.selectFrom('phone_verifications').selectAll().where('provider_ref', '=', 'sdk-new').executeTakeFirstOrThrow()
  const copy = { ...row, id: 'another-session' }
  await t.rejects(ctx.app.db.insertInto('phone_verifications').values(copy).execute(), /UNIQUE constraint failed|violates unique constraint/)
  await ctx.app.db.insertInto('phone_verifications').values({ ...copy, provider: 'twilio', provider_ref: 'VE1' }).execute()
  await ctx.app.db.insertInto('phone_verifications').values({ ...copy, id: 'a-third', provider: 'twilio', provider_ref: 'VE1' }).execute()
  const second = await post(ctx, { verificationId: 'sdk-new', phoneNumber: NUMBER, verificationCode: '000001' })
  t.equal(second.json().sessionId, first.json().sessionId, 'the second call uses the same session')
  t.equal(second.json().remainingAttempts, 3)
})
