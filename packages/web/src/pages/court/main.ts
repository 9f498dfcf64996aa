// The court page's script (GET /r/{courtSlug}): sign in or go on as a guest, tap for the last seconds,
// follow the replay to a playing video, list "My replays". The server writes the words and the
// settings into the page; nothing here talks to another origin.
import type { OAuth2AccessToken, Replay, ReplayCollection, ReplayGuestSession } from '@club/contract'
import { clockOffset, downloadName, failureText, say, stepClasses, tooOld, underWay, type CourtPageConfig, type PendingTap, type ScriptWordKey } from './view.js'

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T
const cfg = JSON.parse($('config').textContent!) as CourtPageConfig
const API = '/apis/v2'
const AUTH = 'club.replays.auth' // sessionStorage: a member's tokens live as long as the tab
const GUEST = 'club.replays.guest' // localStorage: a guest's replays stay on this phone
const PENDING = 'club.replays.pending' // localStorage: taps not yet answered survive a reload
const POLL_MS = 1000
const MAX_AGE_MINUTES = Math.floor(cfg.maxAgeSeconds / 60)

interface Auth {
  access: string
  refresh: string
  expiresAt: number
}
interface Guest {
  token: string
  expiresAt: string
  court: string
}

const t = (key: ScriptWordKey, values?: Record<string, string | number>) => say(cfg.strings, key, values)

function read<T>(store: Storage, key: string): T | null {
  try {
    return JSON.parse(store.getItem(key) ?? 'null') as T | null
  } catch {
    return null
  }
}
function write(store: Storage, key: string, value: unknown): void {
  if (value == null) store.removeItem(key)
  else store.setItem(key, JSON.stringify(value))
}
const clock = (ms: number) => new Date(ms).toLocaleTimeString(cfg.lang, { hour: '2-digit', minute: '2-digit', second: '2-digit' })

const navigation = performance.getEntriesByType?.('navigation')[0] as PerformanceNavigationTiming | undefined
const offset = navigation?.responseStart ? clockOffset(cfg.serverNow, Date.now(), performance.now(), navigation.requestStart, navigation.responseStart) : 0
/** Now on the server's clock. */
const serverNow = () => Date.now() + offset

// Credentials: a member's tokens in memory and sessionStorage (never in a URL), a guest's token in
// localStorage when the club lets guests in.
let auth = read<Auth>(sessionStorage, AUTH)
// A guest session is bound to the court whose page made it: another court's page makes its own.
let guest = cfg.guests ? read<Guest>(localStorage, GUEST) : null
if (guest && guest.court !== cfg.court.id) guest = null
let showingSignIn = false

class NetworkError extends Error {}
class NeedSignIn extends Error {}
/** An error answer: the platform's {statusCode, message, error} read for the player. */
class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 503's camera that does not record (every camera of the court is FAILED): the tap ends, said in words. */
    readonly camera?: { id: string; since: string }
  ) {
    super(message)
  }
}

async function send(method: string, path: string, init: { headers?: Record<string, string>; json?: unknown; form?: Record<string, string> } = {}): Promise<Response> {
  const headers = { ...init.headers }
  let body: string | undefined
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(init.json)
  } else if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    body = new URLSearchParams(init.form).toString()
  }
  try {
    return await fetch(path, { method, headers, body, cache: 'no-store', credentials: 'omit' })
  } catch {
    throw new NetworkError()
  }
}

async function failure(res: Response): Promise<Refused> {
  const body = (await res.json().catch(() => ({}))) as { message?: string; camera?: { id: string; since: string } }
  return new Refused(res.status, body.message || res.statusText, body.camera)
}

const tokenRequest = (form: Record<string, string>) => send('POST', `${API}/oauth2/token`, { form })

function keepTokens(answer: OAuth2AccessToken): void {
  auth = { access: answer.access_token, refresh: answer.refresh_token, expiresAt: Date.now() + answer.expires_in * 1000 }
  write(sessionStorage, AUTH, auth)
}

// One refresh at a time: the server rotates the refresh token, so a second call made meanwhile (the
// clips and the matches load together) would send the spent one and sign the member out.
let refreshing: Promise<boolean> | null = null
const refresh = () => (refreshing ??= renew().finally(() => (refreshing = null)))
async function renew(): Promise<boolean> {
  if (!auth?.refresh) return false
  const res = await tokenRequest({ grant_type: 'refresh_token', refresh_token: auth.refresh })
  if (!res.ok) {
    forget()
    return false
  }
  keepTokens((await res.json()) as OAuth2AccessToken)
  return true
}

async function credential(): Promise<string> {
  if (auth) {
    if (auth.expiresAt - Date.now() < 30_000 && !(await refresh())) throw new NeedSignIn()
    return auth!.access
  }
  if (!cfg.guests) throw new NeedSignIn()
  if (guest && Date.parse(guest.expiresAt) > serverNow()) return guest.token
  const res = await send('POST', `${API}/replays/guest-sessions`, { json: { court: { id: cfg.court.id } } })
  if (!res.ok) throw await failure(res)
  const answer = (await res.json()) as ReplayGuestSession
  guest = { token: answer.token, expiresAt: answer.expiresAt, court: cfg.court.id }
  write(localStorage, GUEST, guest)
  return guest.token
}

/** One API call with the current credential; a 401 refreshes (a member) or starts over (a guest) once. */
async function api(method: string, path: string, json?: unknown, retried = false): Promise<Response> {
  const res = await send(method, API + path, { headers: { authorization: `Bearer ${await credential()}` }, json })
  if (res.status !== 401 || retried) return res
  if (auth) {
    if (!(await refresh())) throw new NeedSignIn()
    return api(method, path, json, true)
  }
  if (!cfg.guests) throw new NeedSignIn()
  guest = null
  write(localStorage, GUEST, null)
  return api(method, path, json, true)
}

/** A GET's answer, or thrown: Refused (said in words by `fail`), offline, signed out. */
async function get<T>(path: string): Promise<T> {
  const res = await api('GET', path)
  if (!res.ok) throw await failure(res)
  return (await res.json()) as T
}
/** Why a call failed, in `box`: a refusal in words, a lost sign-in back to the sign-in form. */
function fail(err: unknown, box: HTMLElement): void {
  if (err instanceof NeedSignIn) forget()
  else if (err instanceof Refused) showError(err, box)
  else box.textContent = t('error.other', { message: String((err as Error)?.message) })
}

function notice(text: string, kind = ''): void {
  const box = $('notice')
  box.textContent = text
  box.dataset.kind = kind
}

/** An error answer in words, in the notice above the buttons or (an opened match's) in `box`. */
function showError(err: Refused, box = $('notice')): void {
  box.dataset.kind = 'error'
  box.textContent = err.status === 402 ? t('error.noItem') : err.status === 429 ? t('error.tooMany') : t('error.other', { message: err.message })
  if (err.status === 402 && cfg.shopUrl) {
    const a = document.createElement('a')
    a.href = cfg.shopUrl
    a.textContent = t('error.buy')
    a.id = 'shop'
    box.append(' ', a)
  }
}

// Views: the sign-in form when an account is needed, the buttons otherwise.
function render(): void {
  const signedIn = !!auth
  const wantsSignIn = !signedIn && (!cfg.guests || showingSignIn)
  $('signin').hidden = !wantsSignIn
  $('taps').hidden = wantsSignIn
  $('signout').hidden = !signedIn
  $('show-signin').hidden = signedIn || !cfg.guests || wantsSignIn
  $('who').textContent = signedIn ? t('signin.signedInAs') : cfg.guests && !wantsSignIn ? t('signin.guest') : ''
  document.body.dataset.view = wantsSignIn ? 'signin' : signedIn ? 'member' : 'guest'
}

/** The tokens gone from this tab (a refresh token the server refused needs nothing more). */
function forget(): void {
  auth = null
  write(sessionStorage, AUTH, null)
  render()
}

// Signing out ends the login on the server too, as the console does, so a copy of the refresh token
// left behind (a shared phone's session restore) is worth nothing. The tab forgets the tokens whatever
// the server answers.
function signOut(): void {
  const refreshToken = auth?.refresh
  forget()
  if (refreshToken) send('POST', `${API}/oauth2/revoke`, { form: { token: refreshToken, token_type_hint: 'refresh_token' } }).catch(() => {})
}

$<HTMLFormElement>('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const form = event.target as HTMLFormElement
  const email = form.elements.namedItem('email') as HTMLInputElement
  const password = form.elements.namedItem('password') as HTMLInputElement
  const button = form.querySelector('button')!
  button.disabled = true
  button.textContent = t('signin.busy')
  $('signin-error').textContent = ''
  try {
    const res = await tokenRequest({ grant_type: 'password', username: email.value, password: password.value })
    if (res.ok) {
      keepTokens((await res.json()) as OAuth2AccessToken)
      password.value = ''
      showingSignIn = false
      render()
      void loadMine()
      void flush()
    } else {
      $('signin-error').textContent = res.status === 400 || res.status === 401 ? t('signin.failed') : t('error.other', { message: res.status })
    }
  } catch {
    $('signin-error').textContent = t('offline.waiting', { time: clock(Date.now()), minutes: MAX_AGE_MINUTES })
  }
  button.disabled = false
  button.textContent = t('signin.submit')
})
$('signout').addEventListener('click', () => {
  $('mine').textContent = $('matches').textContent = ''
  $('match')?.remove()
  signOut()
})
$('show-signin').addEventListener('click', () => {
  showingSignIn = true
  render()
})

// A tap is kept (with the moment it was made, on the server's clock) until the server has it.
const pending = () => read<PendingTap[]>(localStorage, PENDING) ?? []
function tap(seconds: number): void {
  const at = Date.now()
  const key = `${at}-${Math.random().toString(36).slice(2)}`
  write(localStorage, PENDING, [...pending(), { key, court: cfg.court.id, seconds, tapAt: at, end: new Date(at + offset).toISOString() }])
  void flush()
}
const forgetTap = (key: string) => write(localStorage, PENDING, pending().filter((p) => p.key !== key))

let flushing = false
async function flush(): Promise<void> {
  const next = pending()[0]
  if (flushing || !next) return
  // A member or guest may ask only for the last REPLAY_MAX_AGE_SECONDS (on the server's clock): a tap
  // kept offline longer is not sent, and the player is told why in words.
  if (tooOld(next, serverNow(), cfg.maxAgeSeconds)) {
    forgetTap(next.key)
    notice(t('offline.tooOld', { time: clock(next.tapAt), minutes: MAX_AGE_MINUTES }), 'error')
    return flush()
  }
  flushing = true
  notice(t('sending'))
  try {
    const res = await api('POST', '/replays', { court: { id: next.court }, seconds: next.seconds, end: next.end })
    // Only an answer about the tap itself ends its wait: a 2xx, or a 4xx said in words below. A 5xx is
    // the server's trouble, not the tap's: it stays and is sent again.
    // Except the court's cameras all out of order: sending it again would not help.
    if (res.status >= 500) {
      const refused = await failure(res)
      if (res.status !== 503 || !refused.camera) throw refused
      forgetTap(next.key)
      notice(t('error.cameraFailed', { time: clock(Date.parse(refused.camera.since)) }), 'error')
      flushing = false
      return flush()
    }
    forgetTap(next.key)
    if (res.status === 201) {
      notice('')
      follow((await res.json()) as Replay)
    } else showError(await failure(res))
  } catch (err) {
    flushing = false
    if (err instanceof NetworkError) notice(t('offline.waiting', { time: clock(next.tapAt), minutes: MAX_AGE_MINUTES }), 'offline')
    else if (err instanceof Refused && err.status >= 500) notice(t('server.retrying', { time: clock(next.tapAt), status: err.status }), 'retrying')
    else if (err instanceof NeedSignIn) {
      notice('')
      forget()
    } else if (err instanceof Refused) showError(err)
    else notice(t('error.other', { message: String((err as Error)?.message) }), 'error')
    return
  }
  flushing = false
  return flush()
}
window.addEventListener('online', () => void flush())
// Some phones miss the online event, and a server in trouble needs a moment: look again now and then
// while a tap waits.
setInterval(() => void flush(), 5000)

// The replay being made: its steps, then the video or the reason in words.
let following: string | null = null
function follow(replay: Replay): void {
  following = replay.id
  show(replay)
  void poll(replay.id)
}
async function poll(id: string): Promise<void> {
  if (following !== id) return
  try {
    const res = await api('GET', `/replays/${encodeURIComponent(id)}`)
    if (!res.ok) return showError(await failure(res))
    const replay = (await res.json()) as Replay
    if (following !== id) return
    show(replay)
    if (underWay(replay.status)) setTimeout(poll, POLL_MS, id)
    else void loadMine()
  } catch {
    // No network for a moment: keep asking.
    setTimeout(poll, POLL_MS * 2, id)
  }
}
function show(replay: Replay): void {
  const card = $('current')
  card.hidden = false
  card.dataset.id = replay.id
  card.dataset.status = replay.status
  const classes = stepClasses(replay.status)
  Array.from($('steps').children).forEach((item, i) => (item.className = classes[i] ?? ''))
  $('state').textContent = t(`status.${replay.status}`)
  $('message').textContent = replay.status === 'FAILED' ? failureText(cfg.strings, replay, cfg.requirePackage && !!auth) : ''
  const ready = replay.status === 'READY' && replay.downloadUrl
  const video = $<HTMLVideoElement>('player')
  const download = $<HTMLAnchorElement>('download')
  video.hidden = !ready
  $('actions').hidden = !ready
  if (ready && video.dataset.id !== replay.id) {
    video.dataset.id = replay.id
    video.src = download.href = replay.downloadUrl!
    download.download = downloadName(cfg.court.slug, replay.end)
  }
}
$('share').addEventListener('click', () => {
  const url = $<HTMLAnchorElement>('download').href
  if (navigator.share) {
    navigator.share({ title: cfg.court.name, url }).catch(() => {})
    return
  }
  if (navigator.clipboard?.writeText) navigator.clipboard.writeText(url).then(() => notice(t('ready.copied')), () => notice(url))
  else notice(url)
})

// "My replays": this member's, or the ones made on this phone, newest first; a member's matches above.
async function loadMine(): Promise<void> {
  if (!auth && !guest) return
  // A member's matches (issue 49) come with a module of their own, fetched only for a member: the page
  // a player taps on carries none of it (budget.test.ts weighs it apart).
  if (auth) import('./match.js').then((m) => m.loadMatches({ cfg, get, fail })).catch(() => {})
  try {
    const res = await api('GET', '/replays?kind=CLIP&ipp=20')
    if (!res.ok) return
    const page = (await res.json()) as ReplayCollection
    const list = $('mine')
    list.textContent = ''
    if (!page.items.length) list.append(item('li', t('mine.empty'), 'muted'))
    for (const replay of page.items) {
      const li = item('li', '')
      li.dataset.id = replay.id
      li.dataset.status = replay.status
      const seconds = Math.round((Date.parse(replay.end) - Date.parse(replay.start)) / 1000)
      li.append(item('span', t('mine.item', { seconds, time: clock(Date.parse(replay.end) - offset) })))
      if (replay.status === 'READY') {
        const play = item('button', t('mine.play')) as HTMLButtonElement
        play.type = 'button'
        play.addEventListener('click', () => {
          following = replay.id
          show(replay)
          $('current').scrollIntoView({ behavior: 'smooth' })
        })
        li.append(play)
      } else li.append(item('span', t(`status.${replay.status}`), 'muted'))
      list.append(li)
    }
  } catch {
    // Offline or signed out meanwhile: the list stays as it was.
  }
}

function item(tag: string, text: string, className = ''): HTMLElement {
  const element = document.createElement(tag)
  element.textContent = text
  if (className) element.className = className
  return element
}

for (const button of document.querySelectorAll<HTMLButtonElement>('button.tap')) {
  button.addEventListener('click', () => tap(Number(button.dataset.seconds)))
}
render()
void loadMine()
void flush()
document.body.dataset.ready = 'true'
