// Named errors, mapped to status codes in one place (plugins/errors.ts). Services throw these;
// routes never build error bodies by hand.

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Fields the body carries besides the error shape (e.g. `errors` of a refused redemption). */
    readonly body: Record<string, unknown> = {}
  ) {
    super(message)
  }
}

export class BadRequestError extends HttpError {
  override name = 'BadRequestError'
  constructor(message: string) {
    super(400, message)
  }
}

export class UnauthorizedError extends HttpError {
  override name = 'UnauthorizedError'
  /** `challenge` is the WWW-Authenticate value (RFC 6750 section 3). */
  constructor(message: string, challenge = 'Bearer') {
    super(401, message, { 'www-authenticate': challenge })
  }
}

export class ForbiddenError extends HttpError {
  override name = 'ForbiddenError'
  constructor(message: string) {
    super(403, message)
  }
}

export class NotFoundError extends HttpError {
  override name = 'NotFoundError'
  constructor(message: string) {
    super(404, message)
  }
}

export class ConflictError extends HttpError {
  override name = 'ConflictError'
  constructor(message: string) {
    super(409, message)
  }
}

export class PreconditionFailedError extends HttpError {
  override name = 'PreconditionFailedError'
  constructor(message: string) {
    super(412, message)
  }
}

export class TooManyRequestsError extends HttpError {
  override name = 'TooManyRequestsError'
  constructor(message: string, retryAfterSeconds?: number) {
    super(429, message, retryAfterSeconds !== undefined ? { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) } : {})
  }
}

/** RFC 6749 section 5.2 errors of the token endpoint; the body adds `error_description`. */
export class OAuth2Error extends HttpError {
  override name = 'OAuth2Error'
  constructor(
    readonly code:
      | 'invalid_request'
      | 'invalid_client'
      | 'invalid_grant'
      | 'unauthorized_client'
      | 'unsupported_grant_type'
      | 'invalid_scope',
    description: string,
    statusCode = 400,
    headers: Record<string, string> = {}
  ) {
    super(statusCode, description, headers)
  }
}

/** An outside service this server relies on (an SMS provider, the mail relay) failed or refused it. */
export class BadGatewayError extends HttpError {
  override name = 'BadGatewayError'
  constructor(message: string) {
    super(502, message)
  }
}

/** A charge the request depends on was refused (a pause fee): nothing was made. */
export class PaymentRequiredError extends HttpError {
  override name = 'PaymentRequiredError'
  constructor(message: string) {
    super(402, message)
  }
}

/** An outside party this server called (a recording box) could not be reached or did not answer in time. */
export class GatewayTimeoutError extends HttpError {
  override name = 'GatewayTimeoutError'
  constructor(message: string) {
    super(504, message)
  }
}

/** A feature this deployment has not configured (e.g. forum single sign-on without a secret). */
export class ServiceUnavailableError extends HttpError {
  override name = 'ServiceUnavailableError'
  constructor(message: string, headers: Record<string, string> = {}, body: Record<string, unknown> = {}) {
    super(503, message, headers, body)
  }
}

/** The request's body or encoding is of a kind this server does not take (RFC 9110 section 15.5.16). */
export class UnsupportedMediaTypeError extends HttpError {
  override name = 'UnsupportedMediaTypeError'
  constructor(message: string) {
    super(415, message)
  }
}

const QUOTE_LIMIT = 40

/** A value that reads unambiguously without quotes: an id, a slug, a path. */
const PLAIN = /^[A-Za-z0-9._~:@/+=-]+$/

/**
 * A value from the request as an error message may show it: as it is when short and plain (an id,
 * a slug), JSON-quoted otherwise, and cut to a short prefix with its length when long. Messages name
 * what was wrong; repeating a 100 KB id back to its sender helps no one and fills logs.
 */
export function quote(value: unknown, options: { limit?: number; alwaysQuoted?: boolean } = {}): string {
  const text = String(value)
  const limit = options.limit ?? QUOTE_LIMIT
  if (text.length <= limit) return PLAIN.test(text) && !options.alwaysQuoted ? text : JSON.stringify(text)
  return `${JSON.stringify(text.slice(0, limit))}… (${text.length} characters)`
}
