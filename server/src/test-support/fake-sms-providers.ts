// Local stand-ins for the SMS providers, on 127.0.0.1, speaking the documented request and answer
// shapes of Twilio Verify v2 and the Identity Toolkit REST API, errors included.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface RecordedRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

async function listen(t: Teardown, handle: (req: RecordedRequest, res: ServerResponse) => void): Promise<{ baseUrl: string; requests: RecordedRequest[]; server: Server }> {
  const requests: RecordedRequest[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body }
      requests.push(recorded)
      handle(recorded, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => stopServer(server))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return { baseUrl: `http://127.0.0.1:${port}`, requests, server }
}

/** Closes a fake at once: the client's keep-alive connections would otherwise hold it open. */
export function stopServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

export const TWILIO = { accountSid: `AC${'a'.repeat(32)}`, authToken: 'twilio-auth-token-secret', serviceSid: `VA${'b'.repeat(32)}` }

interface TwilioVerification {
  sid: string
  to: string
  code: string
  status: string
  checks: number
}

/**
 * Twilio Verify: Basic auth with the account SID and auth token; form bodies; JSON answers. The
 * code it "sends" is `code`. A number in `invalidNumbers` gets 60200; more than 5 sends to one
 * number is 60203; a 6th check is 60202; a verification approved or out of checks is gone (404).
 * `failWith` makes every request answer that status.
 */
export async function fakeTwilio(t: Teardown, options: { code?: string; invalidNumbers?: string[] } = {}) {
  const verifications = new Map<string, TwilioVerification>()
  const sendsTo = new Map<string, number>()
  const state = { failWith: 0 }
  const code = options.code ?? '424242'
  const error = (res: ServerResponse, status: number, twilioCode: number, message: string) =>
    json(res, status, { code: twilioCode, message, more_info: `https://www.twilio.com/docs/errors/${twilioCode}`, status })
  const base = `/v2/Services/${TWILIO.serviceSid}`
  const fake = await listen(t, (req, res) => {
    const expected = `Basic ${Buffer.from(`${TWILIO.accountSid}:${TWILIO.authToken}`).toString('base64')}`
    if (req.headers.authorization !== expected) return error(res, 401, 20003, 'Authenticate')
    if (state.failWith) return error(res, state.failWith, 20500, 'Internal Server Error')
    const form = new URLSearchParams(req.body)
    if (req.method === 'POST' && req.url === `${base}/Verifications`) {
      const to = form.get('To') ?? ''
      if (!/^\+\d+$/.test(to) || options.invalidNumbers?.includes(to)) return error(res, 400, 60200, 'Invalid parameter `To`: ' + to)
      const sends = (sendsTo.get(to) ?? 0) + 1
      sendsTo.set(to, sends)
      if (sends > 5) return error(res, 429, 60203, 'Max send attempts reached')
      // The same verification is re-sent while one is pending for the number.
      let verification = [...verifications.values()].find((v) => v.to === to && v.status === 'pending')
      if (!verification) {
        verification = { sid: `VE${randomBytes(16).toString('hex')}`, to, code, status: 'pending', checks: 0 }
        verifications.set(verification.sid, verification)
      }
      return json(res, 201, {
        sid: verification.sid,
        service_sid: TWILIO.serviceSid,
        account_sid: TWILIO.accountSid,
        to,
        channel: form.get('Channel'),
        status: 'pending',
        valid: false,
        lookup: {},
        send_code_attempts: [],
        url: `https://verify.twilio.com${base}/Verifications/${verification.sid}`
      })
    }
    if (req.method === 'POST' && req.url === `${base}/VerificationCheck`) {
      const verification = verifications.get(form.get('VerificationSid') ?? '')
      if (!verification) {
        return error(res, 404, 20404, `The requested resource /Services/${TWILIO.serviceSid}/VerificationCheck was not found`)
      }
      verification.checks += 1
      if (verification.checks > 5) {
        verifications.delete(verification.sid)
        return error(res, 429, 60202, 'Max check attempts reached')
      }
      const approved = form.get('Code') === verification.code
      if (approved) verifications.delete(verification.sid)
      return json(res, 200, {
        sid: verification.sid,
        service_sid: TWILIO.serviceSid,
        account_sid: TWILIO.accountSid,
        to: verification.to,
        channel: 'sms',
        status: approved ? 'approved' : 'pending',
        valid: approved
      })
    }
    return error(res, 404, 20404, `The requested resource ${req.url} was not found`)
  })
  return { ...fake, verifications, state }
}

export const FIREBASE_API_KEY = 'AIza-fake-firebase-api-key'

/**
 * Identity Toolkit: the API key in x-goog-api-key (or ?key=); JSON bodies; errors as
 * `{error: {code, message, errors, status}}`. Sends need a reCAPTCHA token (`bad` fails the check);
 * the code sent is `code`. `expired` sessionInfos answer SESSION_EXPIRED; `phoneNumberOverride`
 * makes a successful sign-in report another number.
 */
export async function fakeFirebase(t: Teardown, options: { code?: string; invalidNumbers?: string[] } = {}) {
  const sessions = new Map<string, { phoneNumber: string; code: string }>()
  const state = { expired: new Set<string>(), phoneNumberOverride: '', failWith: 0 }
  const code = options.code ?? '135790'
  const error = (res: ServerResponse, status: number, message: string, googleStatus = 'INVALID_ARGUMENT') =>
    json(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason: 'invalid' }], status: googleStatus } })
  const fake = await listen(t, (req, res) => {
    const url = new URL(req.url, 'http://localhost')
    const key = req.headers['x-goog-api-key'] ?? url.searchParams.get('key')
    if (key !== FIREBASE_API_KEY) return error(res, 400, 'API key not valid. Please pass a valid API key.')
    if (state.failWith) return error(res, state.failWith, 'INTERNAL_ERROR', 'INTERNAL')
    let body: Record<string, string>
    try {
      body = JSON.parse(req.body)
    } catch {
      return error(res, 400, 'Invalid JSON payload received.')
    }
    if (url.pathname === '/v1/accounts:sendVerificationCode') {
      if (!body.phoneNumber) return error(res, 400, 'MISSING_PHONE_NUMBER')
      if (options.invalidNumbers?.includes(body.phoneNumber)) return error(res, 400, 'INVALID_PHONE_NUMBER : Invalid format.')
      if (!body.recaptchaToken) return error(res, 400, 'MISSING_RECAPTCHA_TOKEN')
      if (body.recaptchaToken === 'bad') return error(res, 400, 'CAPTCHA_CHECK_FAILED : Recaptcha verification failed - DUPE')
      if (body.recaptchaToken === 'quota') return error(res, 400, 'TOO_MANY_ATTEMPTS_TRY_LATER')
      const sessionInfo = randomBytes(48).toString('base64url')
      sessions.set(sessionInfo, { phoneNumber: body.phoneNumber, code })
      return json(res, 200, { sessionInfo })
    }
    if (url.pathname === '/v1/accounts:signInWithPhoneNumber') {
      if (!body.sessionInfo) return error(res, 400, 'MISSING_SESSION_INFO')
      if (!body.code) return error(res, 400, 'MISSING_CODE')
      if (state.expired.has(body.sessionInfo)) return error(res, 400, 'SESSION_EXPIRED')
      const session = sessions.get(body.sessionInfo)
      if (!session) return error(res, 400, 'INVALID_SESSION_INFO')
      if (body.code !== session.code) return error(res, 400, 'INVALID_CODE')
      return json(res, 200, {
        idToken: 'eyJ.fake.idtoken',
        refreshToken: 'fake-refresh',
        expiresIn: '3600',
        localId: 'uid-1',
        isNewUser: true,
        phoneNumber: state.phoneNumberOverride || session.phoneNumber
      })
    }
    return error(res, 404, 'NOT_FOUND', 'NOT_FOUND')
  })
  return { ...fake, sessions, state }
}
