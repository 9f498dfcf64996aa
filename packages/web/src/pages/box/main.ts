// The recording box's own page, for the installer standing next to it: what the box waits for, every
// camera's picture and state, and its disk. Read-only. Its data comes from the local API behind the
// installer's session (the local password; the cookie is HttpOnly), so the page signs in first.
import type { AgentCamera, AgentHealth } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatAgo, formatBytes, formatTime } from '../shared/format.js'
import { cameraLines, waitingFor } from './view.js'

/** The state every few seconds; each camera's picture as often, one request at a time per camera. */
const REFRESH_MS = 5000

const root = document.getElementById('app')!
let timer: ReturnType<typeof setTimeout> | undefined
/** Each camera's picture element and the object URL it shows, kept across refreshes. */
const pictures = new Map<string, { figure: HTMLElement; url?: string; busy: boolean }>()

async function signIn(message?: string): Promise<void> {
  clearTimeout(timer)
  const password = h('input', { type: 'password', autocomplete: 'current-password', required: true })
  const status = h('p', { class: 'error', role: 'alert' }, message ?? '')
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in')
  show(
    root,
    h(
      'main',
      { id: 'main' },
      h(
        'form',
        {
          class: 'card narrow',
          onsubmit: async (event) => {
            event.preventDefault()
            submit.disabled = true
            const res = await fetch('/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: password.value }) })
            if (res.status === 204) return void refresh()
            const body = (await res.json().catch(() => ({}))) as { message?: string }
            status.textContent = body.message ?? `Not signed in (${res.status})`
            submit.disabled = false
          }
        },
        heading('Recording box'),
        h('p', {}, "Sign in with the box's local password to see its state and its cameras."),
        field('Local password', password, 'Made on the box with: club-agent local-password'),
        status,
        submit
      )
    )
  )
  password.focus()
}

async function signOut(): Promise<void> {
  await fetch('/session', { method: 'DELETE' }).catch(() => undefined)
  for (const picture of pictures.values()) if (picture.url) URL.revokeObjectURL(picture.url)
  pictures.clear()
  await signIn('Signed out.')
}

/** Fetches a camera's picture as a blob, so a refusal (no footage yet, LUT missing, busy) reads as words. */
async function refreshPicture(camera: AgentCamera): Promise<void> {
  const picture = pictures.get(camera.id)
  if (!picture || picture.busy) return
  picture.busy = true
  try {
    const res = await fetch(`/cameras/${encodeURIComponent(camera.id)}/snapshot`)
    if (res.ok) {
      const url = URL.createObjectURL(await res.blob())
      const img = h('img', { src: url, alt: `The latest picture of ${camera.name ?? camera.id}`, 'data-camera': camera.id })
      show(picture.figure, img, h('figcaption', { class: 'hint' }, `Picture of ${new Date().toLocaleTimeString()}`))
      if (picture.url) URL.revokeObjectURL(picture.url)
      picture.url = url
    } else if (res.status !== 429) {
      // 429: every decoder is busy; the last picture stays until the next try.
      const body = (await res.json().catch(() => ({}))) as { message?: string }
      show(picture.figure, h('div', { class: 'nopicture' }, `No picture: ${body.message ?? res.status}`))
    }
  } catch {
    // The box is restarting or the network dropped: the next refresh tries again.
  } finally {
    picture.busy = false
  }
}

function cameraCard(camera: AgentCamera, now: number): HTMLElement {
  const lines = cameraLines(camera, now)
  let picture = pictures.get(camera.id)
  if (!picture) {
    picture = { figure: h('figure', {}, h('div', { class: 'nopicture' }, 'Loading the picture…')), busy: false }
    pictures.set(camera.id, picture)
  }
  return h(
    'article',
    { class: 'card camera', 'data-camera': camera.id, 'aria-labelledby': `cam-${camera.id}` },
    h('h3', { id: `cam-${camera.id}` }, camera.name ? `${camera.name} (${camera.id})` : camera.id),
    picture.figure,
    h(
      'dl',
      { class: 'facts' },
      h('div', {}, h('dt', {}, 'State'), h('dd', { class: `rec-${camera.state}`, 'data-fact': 'state' }, lines.state)),
      h('div', {}, h('dt', {}, 'Feed in use'), h('dd', { 'data-fact': 'feed' }, lines.feed)),
      h('div', {}, h('dt', {}, 'Last segment'), h('dd', { 'data-fact': 'lastSegment', title: formatTime(camera.lastSegmentAt) }, lines.lastSegment))
    ),
    lines.problems.length > 0 ? h('ul', { class: 'error', 'data-fact': 'problems' }, lines.problems.map((p) => h('li', {}, p))) : null
  )
}

function draw(health: AgentHealth): void {
  const now = Date.now()
  const waiting = waitingFor(health)
  const disk = health.disk
  const fact = (label: string, value: string, key: string) => h('div', {}, h('dt', {}, label), h('dd', { 'data-fact': key }, value))
  // Pictures of cameras no longer configured are let go.
  for (const [id, picture] of pictures) {
    if (!health.cameras.some((c) => c.id === id)) {
      if (picture.url) URL.revokeObjectURL(picture.url)
      pictures.delete(id)
    }
  }
  const main = h(
    'main',
    { id: 'main' },
    h('header', { class: 'buttons' }, h('span', { class: 'hint' }, `club-agent ${health.version}`), h('button', { type: 'button', onclick: () => void signOut() }, 'Sign out')),
    heading(health.displayName ?? health.hostname),
    h('section', { 'aria-labelledby': 'waiting-h', class: 'card' },
      h('h2', { id: 'waiting-h', class: `state tone-${waiting.tone}`, 'data-fact': 'status' }, waiting.headline),
      h('p', { 'data-fact': 'waiting' }, waiting.detail),
      h(
        'dl',
        { class: 'facts' },
        fact('Device id', health.deviceId, 'deviceId'),
        fact('Box key', health.keyFingerprint, 'keyFingerprint'),
        fact('Hostname', health.hostname, 'hostname'),
        fact('Server', health.serverUrl, 'serverUrl'),
        fact('Server reached', health.lastContactAt ? `${health.connected ? 'yes' : 'not now'}, last ${formatAgo(health.lastContactAt, now)}` : 'never', 'contact'),
        health.pendingUpdate ? fact('Update', `to version ${health.pendingUpdate.version} asked by the server`, 'update') : null
      )
    ),
    h('h2', {}, 'Cameras'),
    health.cameras.length === 0
      ? h('p', {}, health.status === 'APPROVED' ? 'The configuration has no camera yet: an admin adds them in the console.' : 'No camera: cameras come with the approval.')
      : h('div', { class: 'cameras' }, health.cameras.map((c) => cameraCard(c, now))),
    h('h2', {}, 'Disk'),
    h(
      'dl',
      { class: 'facts card' },
      fact('Free space', formatBytes(health.freeDiskBytes), 'freeDiskBytes'),
      fact('Recordings', formatBytes(disk.recordingsBytes), 'recordingsBytes'),
      fact('Kept for', `${disk.retentionHours} hours`, 'retention'),
      fact('Free-space floor', formatBytes(disk.minFreeBytes), 'minFree'),
      fact('Cleanup', health.cleanupEnabled ? 'on' : 'off (the configuration turns it on)', 'cleanup'),
      fact('Last cleanup', disk.lastCleanupAt ? `${formatTime(disk.lastCleanupAt)}, ${disk.lastCleanupDeleted ?? 0} files deleted` : 'not since the box started', 'lastCleanup')
    ),
    liveRegion('alert')
  )
  const focused = document.activeElement?.textContent === 'Sign out'
  show(root, main)
  if (focused) main.querySelector('button')?.focus()
  for (const camera of health.cameras) void refreshPicture(camera)
}

async function refresh(): Promise<void> {
  clearTimeout(timer)
  try {
    const res = await fetch('/health', { headers: { accept: 'application/json' } })
    if (res.status === 401) return void signIn()
    if (!res.ok) throw new Error(`the box answered ${res.status}`)
    draw((await res.json()) as AgentHealth)
  } catch (err) {
    const alert = root.querySelector('[role=alert]')
    if (alert) alert.textContent = `The box did not answer: ${(err as Error).message}. Trying again.`
  }
  timer = setTimeout(() => void refresh(), REFRESH_MS)
}

void refresh()
