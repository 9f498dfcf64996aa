// The one way the SMS providers reach their HTTP APIs (undici): bounded waits, and every failure to
// get an answer becomes a 502 for the caller. URLs and credentials are never logged.
import type { FastifyBaseLogger } from 'fastify'
import { BadGatewayError } from '../../errors.js'

const TIMEOUT_MS = 10_000

export interface ProviderAnswer {
  status: number
  body: unknown
}

export async function postToProvider(
  log: FastifyBaseLogger,
  what: { provider: string; operation: string },
  url: string,
  options: { headers: Record<string, string>; body: string }
): Promise<ProviderAnswer> {
  // Loaded on the first SMS: a process that sends none (most test apps, every CLI command) skips it.
  const { request } = await import('undici')
  let status: number
  let text: string
  try {
    const res = await request(url, {
      method: 'POST',
      headers: options.headers,
      body: options.body,
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS
    })
    status = res.statusCode
    text = await res.body.text()
  } catch (err) {
    log.warn({ ...what, failure: (err as { code?: string }).code ?? (err as Error).name }, 'SMS provider unreachable')
    throw new BadGatewayError('the SMS provider could not be reached; try again later')
  }
  let body: unknown = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    if (status < 500) {
      log.warn({ ...what, status }, 'SMS provider answered something other than JSON')
      throw new BadGatewayError('the SMS provider gave an answer this server does not understand')
    }
  }
  return { status, body }
}

/** A provider failure that is not the caller's doing: logged for the operator, a 502 for the caller. */
export function providerFailure(
  log: FastifyBaseLogger,
  what: { provider: string; operation: string },
  answer: ProviderAnswer,
  providerCode: string | number | undefined
): BadGatewayError {
  log.error({ ...what, status: answer.status, providerCode }, 'SMS provider refused the request')
  return new BadGatewayError(
    answer.status === 401 || answer.status === 403
      ? "the SMS provider refused this server's credentials"
      : 'the SMS provider failed; try again later'
  )
}
