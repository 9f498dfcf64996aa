// The page behind the link the password reset mail sends (PUBLIC_BASE_URL/password-reset?token=…):
// the new password typed twice against the rules shown, the token taken from the link (shared/link.ts),
// the answer in words.
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { messageOf, showCard, tokenFromLink } from '../shared/link.js'
import { PASSWORD_RULES, passwordProblem, resetOutcome } from './view.js'

const root = document.getElementById('app')!
const STORAGE_KEY = 'club.password-reset.token'
const token = tokenFromLink(STORAGE_KEY)

/** Asks for a new link: the server answers the same for every address, so the page does too. */
function newLinkForm(): HTMLFormElement {
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true })
  const status = liveRegion('status')
  const submit = h('button', { type: 'submit' }, 'Send a new link')
  return h(
    'form',
    {
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        const res = await fetch('/apis/v2/oauth2/users/credentials', {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: email.value.trim() })
        }).catch(() => null)
        status.textContent = res?.ok
          ? `If ${email.value.trim()} is the address of a club account, a new link is on its way. It works for one hour.`
          : `No link was sent: ${res ? await messageOf(res) : 'the server could not be reached'}. Try again in a moment.`
        submit.disabled = false
      }
    },
    h('h2', {}, 'A new link'),
    field('E-mail of your account', email),
    submit,
    status
  )
}

function linkProblemPage(text: string): void {
  sessionStorage.removeItem(STORAGE_KEY)
  showCard(root, heading('Choose a new password'), h('p', { class: 'error', role: 'alert' }, text), newLinkForm())
}

function donePage(text: string): void {
  sessionStorage.removeItem(STORAGE_KEY)
  showCard(
    root,
    heading('Password changed'),
    h('p', { class: 'notice', role: 'status' }, text),
    h('p', {}, "Sign in with it in the club's app, or, for the club's staff, in the ", h('a', { href: '/console' }, 'console'), '.')
  )
}

function resetForm(resetToken: string): void {
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'new-password', required: true, minlength: 8, maxlength: 1024 })
  const again = h('input', { type: 'password', name: 'again', autocomplete: 'new-password', required: true })
  const status = liveRegion('alert')
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Change the password')
  const form = h(
    'form',
    {
      class: 'card narrow',
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault()
        const problem = passwordProblem(password.value, again.value)
        status.textContent = problem ?? ''
        password.setAttribute('aria-invalid', String(problem !== null && !/not the same/.test(problem)))
        again.setAttribute('aria-invalid', String(problem !== null && /not the same/.test(problem)))
        if (problem) return
        submit.disabled = true
        const res = await fetch('/apis/v2/oauth2/users/credentials/reset', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: resetToken, password: password.value })
        }).catch(() => null)
        const outcome = res
          ? resetOutcome(res.status, res.ok ? '' : await messageOf(res), Number(res.headers.get('retry-after') ?? 0))
          : resetOutcome(0, 'the server could not be reached')
        if (outcome.kind === 'done') return donePage(outcome.text)
        if (outcome.kind === 'link') return linkProblemPage(outcome.text)
        status.textContent = outcome.text
        if (outcome.kind === 'password') password.setAttribute('aria-invalid', 'true')
        submit.disabled = false
      }
    },
    heading('Choose a new password'),
    h('p', {}, 'Type the new password of your club account twice. The rules:'),
    h('ul', { id: 'rules' }, PASSWORD_RULES.map((rule) => h('li', {}, rule))),
    field('New password', password),
    field('The new password again', again),
    status,
    submit,
    h('p', { class: 'hint' }, 'Changing it signs your account out on every device and revokes its API keys.')
  )
  show(root, h('main', { id: 'main' }, form))
  password.focus()
}

if (token) resetForm(token)
else linkProblemPage('This page opens from the link in a password reset mail, and this address carries none. Ask for a link below.')
