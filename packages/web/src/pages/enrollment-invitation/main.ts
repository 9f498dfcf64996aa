// The page behind the link the enrolment invitation mail sends (PUBLIC_BASE_URL/enrollment-invitation
// ?token=…): the invitation in words (who invites, to which membership) with Accept and Decline, the
// answer in words; a used, withdrawn or expired invitation says so. The token, taken from the link
// (shared/link.ts), is the only credential: no sign-in is needed.
import { h, heading } from '../shared/dom.js'
import { messageOf, showCard, tokenFromLink } from '../shared/link.js'
import { linkOutcome, type Invitation, type LinkOutcome } from './view.js'

const root = document.getElementById('app')!
const STORAGE_KEY = 'club.enrollment-invitation.token'
const TITLE = 'An invitation to a membership'
const token = tokenFromLink(STORAGE_KEY)

/** Calls one of the link's routes and puts its answer in words. */
async function ask(path: 'lookup' | 'answer', body: { token: string; accept?: boolean }): Promise<LinkOutcome> {
  const res = await fetch(`/apis/v2/membership-enrollment-invitations/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body)
  }).catch(() => null)
  if (!res) return linkOutcome(0, 'the server could not be reached', body.accept)
  const answer = res.ok ? ((await res.json()) as Invitation) : await messageOf(res)
  return linkOutcome(res.status, answer, body.accept, Number(res.headers.get('retry-after') ?? 0))
}

/** A final word: the link has done its work, or can do none. */
function endPage(outcome: LinkOutcome): void {
  sessionStorage.removeItem(STORAGE_KEY)
  const done = outcome.kind === 'done'
  showCard(root, heading(done ? 'Invitation answered' : TITLE), h('p', done ? { class: 'notice', role: 'status' } : { class: 'error', role: 'alert' }, outcome.text))
}

function invitationPage(linkToken: string, text: string): void {
  const status = h('p', { class: 'error', role: 'alert' })
  const buttons: HTMLButtonElement[] = []
  const answer = async (accept: boolean) => {
    for (const button of buttons) button.disabled = true
    const outcome = await ask('answer', { token: linkToken, accept })
    if (outcome.kind === 'retry') {
      status.textContent = outcome.text
      for (const button of buttons) button.disabled = false
      return
    }
    endPage(outcome)
  }
  buttons.push(
    h('button', { type: 'button', class: 'primary', onclick: () => answer(true) }, 'Accept'),
    h('button', { type: 'button', onclick: () => answer(false) }, 'Decline')
  )
  showCard(
    root,
    heading(TITLE),
    h('p', { id: 'invitation' }, text),
    h('p', { class: 'hint' }, 'Nothing changes for you until you accept. If you do not know this person, decline.'),
    status,
    h('p', {}, ...buttons)
  )
  buttons[0]!.focus()
}

async function open(linkToken: string): Promise<void> {
  const outcome = await ask('lookup', { token: linkToken })
  if (outcome.kind === 'invitation') return invitationPage(linkToken, outcome.text)
  if (outcome.kind === 'retry') {
    // The link may still be good: keep the token for a reload.
    showCard(root, heading(TITLE), h('p', { class: 'error', role: 'alert' }, outcome.text))
    return
  }
  endPage(outcome)
}

if (token) void open(token)
else endPage({ kind: 'closed', text: 'This page opens from the link in an invitation mail, and this address carries none.' })
