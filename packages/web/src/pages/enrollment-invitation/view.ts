// The invitation page's decisions that need no browser: the invitation in words, and what the
// server's answers mean for the person holding the link. Tested beside this file.

/** The invitation as POST /apis/v2/membership-enrollment-invitations/lookup answers it. */
export interface Invitation {
  inviter: { name: string }
  membership: { displayName: string }
  invitationStatus: 'INVITED' | 'ACCEPTED' | 'DECLINED'
}

export function invitationText(invitation: Invitation): string {
  return `${invitation.inviter.name} invited you to share their membership "${invitation.membership.displayName}".`
}

export type LinkOutcome =
  /** The invitation, to be answered. */
  | { kind: 'invitation'; text: string }
  /** Answered now: accepted or declined. */
  | { kind: 'done'; text: string }
  /** The link cannot be used (unknown, used, withdrawn, expired), or accepting was refused for good. */
  | { kind: 'closed'; text: string }
  /** Anything else: try again later. */
  | { kind: 'retry'; text: string }

/**
 * An answer of the lookup (`accept` undefined) or of the answer route in words. `answer` is the
 * invitation on success, the platform's error message otherwise.
 */
export function linkOutcome(status: number, answer: Invitation | string, accept?: boolean, retryAfterSeconds?: number): LinkOutcome {
  if (status >= 200 && status < 300 && typeof answer !== 'string') {
    if (accept === undefined) return { kind: 'invitation', text: invitationText(answer) }
    return answer.invitationStatus === 'ACCEPTED'
      ? { kind: 'done', text: `You accepted: you now share the membership "${answer.membership.displayName}" of ${answer.inviter.name}.` }
      : { kind: 'done', text: `You declined the invitation of ${answer.inviter.name}: nothing changes for you.` }
  }
  // A schema refusal names the field as `body.token`; the server's own rules name it `token`.
  const message = typeof answer === 'string' ? answer.replace(/^body\./, '') : ''
  if (status === 400 && /^token\b/.test(message)) {
    return { kind: 'closed', text: 'This link is not valid. Open the link of the invitation mail as it came, or ask the member who invited you.' }
  }
  if (status === 409 && /already answered \(ACCEPTED\)/.test(message)) return { kind: 'closed', text: 'This invitation was already accepted: the link works once.' }
  if (status === 409 && /already answered \(DECLINED\)/.test(message)) return { kind: 'closed', text: 'This invitation was already declined: the link works once.' }
  if (status === 409 && /withdrawn/.test(message)) return { kind: 'closed', text: 'This invitation was withdrawn by the member who sent it: there is nothing to answer.' }
  if (status === 409 && /has expired/.test(message)) {
    return { kind: 'closed', text: 'This invitation has expired: the membership it was for has ended. Ask the member who invited you for a new one.' }
  }
  if (status === 409) return { kind: 'closed', text: `The invitation could not be accepted: ${message}.` }
  if (status === 429) {
    const wait = retryAfterSeconds && retryAfterSeconds > 0 ? ` in ${Math.ceil(retryAfterSeconds / 60)} min` : ' later'
    return { kind: 'retry', text: `Too many attempts from here: try again${wait}.` }
  }
  return { kind: 'retry', text: `Nothing was answered (${status}: ${message || 'no answer'}). Try again in a moment.` }
}
