// The password reset page's decisions that need no browser: what is wrong with the two passwords
// typed, and what the server's answer means in words. Tested beside this file.

/** The server's rules (users/service.ts checkPasswordPolicy, NIST 800-63B), as the page lists them. */
export const PASSWORD_RULES = [
  'At least 8 characters; a few words make a good one.',
  'Not one character repeated (not "aaaaaaaa").',
  'At most 1024 characters.'
]

/** What stops the two passwords from being sent, or null when they may go. */
export function passwordProblem(password: string, again: string): string | null {
  if ([...password].length < 8) return 'The new password must be at least 8 characters long.'
  if (password.length > 1024) return 'The new password must be at most 1024 characters long.'
  if (/^(.)\1*$/u.test(password)) return 'The new password must not be one character repeated.'
  if (password !== again) return 'The two passwords are not the same: type the new one twice.'
  return null
}

export type ResetOutcome =
  /** The password is changed. */
  | { kind: 'done'; text: string }
  /** The link cannot be used (unknown, used, expired): only a new mail helps. */
  | { kind: 'link'; text: string }
  /** The password was refused: another one will do. */
  | { kind: 'password'; text: string }
  /** Anything else: try again later. */
  | { kind: 'retry'; text: string }

/** The answer of POST /apis/v2/oauth2/users/credentials/reset in words for the person holding the link. */
export function resetOutcome(status: number, answer: string, retryAfterSeconds?: number): ResetOutcome {
  // A schema refusal names the field as `body.token`; the server's own rules name it `token`.
  const message = answer.replace(/^body\./, '')
  if (status >= 200 && status < 300) {
    return {
      kind: 'done',
      text:
        'Your password is changed. Every device signed in to your account was signed out and the API keys of the account ' +
        'were revoked. Sign in with the new password.'
    }
  }
  if (status === 400 && /^token has expired/.test(message)) {
    return { kind: 'link', text: 'This link has expired: a reset link works for one hour. Ask for a new one below.' }
  }
  if (status === 400 && /^token was already used/.test(message)) {
    return { kind: 'link', text: 'This link was already used to choose a password. If that was not you, ask for a new link below.' }
  }
  if (status === 400 && /^token\b/.test(message)) {
    return { kind: 'link', text: 'This link is not valid: a newer reset mail replaces the links sent before it. Use the newest, or ask for a new one below.' }
  }
  if (status === 400 && /^password\b/.test(message)) {
    return { kind: 'password', text: `The server refused this password: ${message}.` }
  }
  if (status === 429) {
    const wait = retryAfterSeconds && retryAfterSeconds > 0 ? ` in ${Math.ceil(retryAfterSeconds / 60)} min` : ' later'
    return { kind: 'retry', text: `Too many attempts from here: try again${wait}.` }
  }
  return { kind: 'retry', text: `The password was not changed (${status}: ${message}). Try again in a moment.` }
}
