// The admin console: sign-in, then the recording boxes, templates, replays, the footage log and the webhook endpoints, each at a #/ address
// (the address bar never carries a token). Staff and admins only; a member is told so.
import type { User } from '@club/contract'
import { h, show, field } from '../shared/dom.js'
import { Session } from './api.js'
import { boxList } from './boxes.js'
import { boxPage } from './box-page.js'
import type { Context, PageView } from './page.js'
import { replayList } from './replays.js'
import { rolloutList } from './rollouts.js'
import { footageLog } from './footage.js'
import { templateList, templatePage } from './templates.js'
import { webhookList, webhookPage } from './webhooks.js'

const root = document.getElementById('app')!
const session = new Session(sessionStorage)
let user: User | null = null
let stop: (() => void) | undefined

session.onExpired = () => {
  user = null
  void render('Your session has ended: sign in again.')
}

function go(hash: string): void {
  if (location.hash === hash) void render()
  else location.hash = hash
}

function signInPage(message?: string): void {
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true })
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true })
  const status = h('p', { class: 'error', role: 'alert' }, message ?? '')
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in')
  const form = h(
    'form',
    {
      class: 'card narrow',
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        status.textContent = ''
        try {
          await session.signIn(email.value.trim(), password.value)
          user = null
          await render()
        } catch (err) {
          status.textContent = `Not signed in: ${(err as Error).message}`
          submit.disabled = false
        }
      }
    },
    h('h1', {}, 'Club console'),
    h('p', {}, 'Sign in with your club account (staff and admins).'),
    field('E-mail', email),
    field('Password', password),
    status,
    submit
  )
  show(root, h('main', { id: 'main' }, form))
  email.focus()
}

function signOutButton(): HTMLButtonElement {
  return h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        await session.signOut()
        user = null
        // Back to the console's own address without a hashchange (which would draw the sign-in again).
        history.replaceState(null, '', location.pathname)
        await render('You are signed out.')
      }
    },
    'Sign out'
  )
}

function noAccessPage(current: User): void {
  show(
    root,
    h(
      'main',
      { id: 'main' },
      h(
        'div',
        { class: 'card narrow', role: 'alert' },
        h('h1', {}, 'No access'),
        h('p', {}, `You are signed in as ${current.email}, a member. The console is for the club's staff and admins, so this account has no access to it.`),
        signOutButton()
      )
    )
  )
}

const routes: Array<{ pattern: RegExp; view: PageView; admin?: boolean }> = [
  { pattern: /^#\/boxes\/?$/, view: boxList, admin: true },
  { pattern: /^#\/boxes\/([^/]+)$/, view: boxPage, admin: true },
  { pattern: /^#\/rollouts\/?$/, view: rolloutList, admin: true },
  { pattern: /^#\/templates\/?$/, view: templateList },
  { pattern: /^#\/templates\/([^/]+)$/, view: templatePage },
  { pattern: /^#\/replays\/?$/, view: replayList },
  { pattern: /^#\/footage\/?$/, view: footageLog, admin: true },
  { pattern: /^#\/webhooks\/?$/, view: webhookList, admin: true },
  { pattern: /^#\/webhooks\/([^/]+)$/, view: webhookPage, admin: true }
]

async function render(message?: string): Promise<void> {
  stop?.()
  stop = undefined
  if (!session.signedIn) return signInPage(message)
  if (!user) {
    try {
      user = await session.call<User>('GET', '/apis/v2/users/current')
    } catch (err) {
      return signInPage((err as Error).message)
    }
  }
  if (user.role === 'member') return noAccessPage(user)
  const isAdmin = user.role === 'admin'
  const hash = location.hash || (isAdmin ? '#/boxes' : '#/templates')
  const link = (href: string, text: string) =>
    h('a', { href, 'aria-current': hash.startsWith(href) ? 'page' : undefined }, text)
  const main = h('main', { id: 'main', tabindex: '-1' })
  show(
    root,
    h('a', { href: '#main', class: 'skip' }, 'Skip to content'),
    h(
      'header',
      { class: 'top' },
      h('strong', {}, 'Club console'),
      h('nav', { 'aria-label': 'Sections' }, isAdmin ? link('#/boxes', 'Boxes') : null, isAdmin ? link('#/rollouts', 'Rollouts') : null, link('#/templates', 'Templates'), link('#/replays', 'Replays'), isAdmin ? link('#/footage', 'Footage log') : null, isAdmin ? link('#/webhooks', 'Webhooks') : null),
      h('span', { class: 'who' }, `${user.email} (${user.role})`, ' ', signOutButton())
    ),
    main
  )
  const ctx: Context = { session, user, go }
  for (const route of routes) {
    const match = route.pattern.exec(hash)
    if (!match) continue
    if (route.admin && !isAdmin) {
      show(main, h('h1', {}, 'Admins only'), h('p', {}, 'Recording boxes, the footage log and webhooks are for admins; your account is staff.'))
      return
    }
    stop = route.view(ctx, main, match[1] ? decodeURIComponent(match[1]) : undefined) ?? undefined
    // Keyboard and screen reader users start at the new page's heading, as after a page load.
    main.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true })
    return
  }
  show(main, h('h1', {}, 'Not found'), h('p', {}, 'There is no such page in the console. '), link(isAdmin ? '#/boxes' : '#/templates', 'Back'))
}

window.addEventListener('hashchange', () => void render())
void render()
