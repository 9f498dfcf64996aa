// Recording boxes: the fleet list (pending first, then by area), and what the list and one box's page
// (box-page.ts) share: badges, the refresh timer, area names.
import type { Area, CameraHealth, FleetSummary, ReplayServer, ReplayServerStatus } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatAgo, formatTime } from '../shared/format.js'
import type { Context, PageView } from './page.js'
import { boxName, filterBoxes, onlineState, sortBoxes } from './view.js'

export const ADMIN = '/apis/v2/admin/replay-servers'
/** How often an open list or box page asks again: boxes poll every few seconds, so does the page. */
export const REFRESH_MS = 3000
export const STATUSES: ReplayServerStatus[] = ['PENDING', 'APPROVED', 'REJECTED', 'REVOKED']

export function statusBadge(status: ReplayServerStatus): HTMLElement {
  return h('span', { class: `badge status-${status.toLowerCase()}` }, status.charAt(0) + status.slice(1).toLowerCase())
}

export function onlineDot(box: ReplayServer): HTMLElement {
  const online = onlineState(box)
  return h('span', { class: `dot dot-${online.state}` }, online.label)
}

/** A camera's health in words: its id, its state since when, and its problem. */
export function cameraTitle(camera: CameraHealth): string {
  return `${camera.id}: ${camera.state.toLowerCase()} since ${formatTime(camera.since)}${camera.problem ? ` (${camera.problem})` : ''}`
}

/** A dot per camera, coloured by its state, its words in the title and for screen readers; none before a report. */
export function cameraDots(box: ReplayServer): HTMLElement {
  const cameras = box.health?.cameras ?? []
  if (cameras.length === 0) return h('span', { class: 'sub' }, box.health ? 'no cameras' : 'no report yet')
  return h(
    'span',
    { class: 'camera-dots' },
    cameras.map((camera) =>
      h('span', { class: `camera-dot camera-${camera.state.toLowerCase()}`, title: cameraTitle(camera), 'data-camera': camera.id, role: 'img', 'aria-label': cameraTitle(camera) })
    )
  )
}

/** The box's problems in words (health.problems), or null when it has none. */
export function problemsText(box: ReplayServer): string | null {
  const words = { CAMERA_FAILED: 'a camera failed', DISK_LOW: 'disk low', CLOCK_SKEWED: 'clock off', OFFLINE: 'offline' } as const
  const problems = box.health?.problems ?? []
  return problems.length === 0 ? null : problems.map((p) => words[p]).join(', ')
}

/** The fleet at a glance (GET /apis/v2/admin/fleet), above the list. */
export function fleetSummary(fleet: FleetSummary): HTMLElement {
  const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`
  const cameras = Object.entries(fleet.cameras).filter(([, n]) => n > 0)
  return h(
    'dl',
    { class: 'facts fleet', 'aria-label': 'The fleet' },
    h('div', {}, h('dt', {}, 'Boxes'), h('dd', { 'data-fleet': 'boxes' }, `${fleet.boxes.byStatus.APPROVED} approved, ${fleet.boxes.byStatus.PENDING} pending, ${fleet.boxes.total} in all`)),
    h('div', {}, h('dt', {}, 'Online'), h('dd', { 'data-fleet': 'online' }, `${fleet.boxes.online} online, ${fleet.boxes.offline} offline`)),
    h(
      'div',
      {},
      h('dt', {}, 'Problems'),
      h('dd', { 'data-fleet': 'problems', class: fleet.boxes.withProblems > 0 ? 'problem' : '' }, fleet.boxes.withProblems > 0 ? `${count(fleet.boxes.withProblems, 'box', 'boxes')} with a problem` : 'none')
    ),
    h(
      'div',
      {},
      h('dt', {}, 'Cameras'),
      h('dd', { 'data-fleet': 'cameras' }, cameras.length === 0 ? 'none reported' : cameras.map(([state, n]) => `${n} ${state.toLowerCase()}`).join(', '))
    ),
    h('div', {}, h('dt', {}, 'Versions'), h('dd', { 'data-fleet': 'versions' }, fleet.versions.map((v) => `${v.version ?? 'unknown'}: ${v.boxes}`).join(', ') || 'none')),
    fleet.rollouts.length > 0
      ? h('div', {}, h('dt', {}, 'Rollouts'), h('dd', { 'data-fleet': 'rollouts' }, fleet.rollouts.map((r) => `${r.version} (${r.status.toLowerCase()})`).join(', ')))
      : null
  )
}

export function versionText(box: ReplayServer): string {
  const running = box.version ?? 'unknown'
  return box.targetVersion && box.targetVersion !== box.version ? `${running} → ${box.targetVersion}` : running
}

/** Repeats `load` while the page is open; answers the stop function the router calls on leaving. */
export function every(ms: number, load: () => Promise<void>): () => void {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const tick = async () => {
    await load().catch(() => undefined)
    if (!stopped) timer = setTimeout(tick, ms)
  }
  timer = setTimeout(tick, ms)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}

export async function areaNames(ctx: Context): Promise<{ areas: Area[]; names: Map<string, string> }> {
  const areas = await ctx.session.all<Area>('/apis/v2/admin/areas')
  areas.sort((a, b) => a.name.localeCompare(b.name))
  return { areas, names: new Map(areas.map((a) => [a.id, a.name])) }
}

export const boxList: PageView = (ctx, main) => {
  const statusFilter = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s }, s.charAt(0) + s.slice(1).toLowerCase())))
  const areaFilter = h('select', { name: 'area' }, h('option', { value: '' }, 'Any area'), h('option', { value: 'none' }, 'No area'))
  const results = h('div', { 'aria-live': 'polite' }, h('p', {}, 'Loading…'))
  const problem = liveRegion('alert')
  let boxes: ReplayServer[] = []
  let names = new Map<string, string>()

  const draw = () => {
    const shown = sortBoxes(filterBoxes(boxes, { status: statusFilter.value as ReplayServerStatus | '', areaId: areaFilter.value }), names)
    const now = Date.now()
    if (shown.length === 0) {
      show(results, h('p', {}, boxes.length === 0 ? 'No box has registered yet. A new box appears here, pending, as soon as it reaches the server.' : 'No box matches these filters.'))
      return
    }
    show(
      results,
      h(
        'table',
        { class: 'list boxes' },
        h('caption', { class: 'sr-only' }, `${shown.length} of ${boxes.length} boxes, pending first, then by area`),
        h('thead', {}, h('tr', {}, ['Box', 'Status', 'Online', 'Cameras', 'Version', 'Last seen', 'Local IP', 'Area'].map((c) => h('th', { scope: 'col' }, c)))),
        h(
          'tbody',
          {},
          shown.map((box) =>
            h(
              'tr',
              { 'data-box': box.id },
              h('td', { 'data-label': 'Box' }, h('a', { href: `#/boxes/${encodeURIComponent(box.id)}` }, boxName(box)), h('small', { class: 'sub' }, box.deviceId)),
              h(
                'td',
                { 'data-label': 'Status' },
                statusBadge(box.status),
                box.claims.length > 0
                  ? h('small', { class: 'sub claims', 'data-claims': String(box.claims.length) }, `${box.claims.length} pending claim${box.claims.length > 1 ? 's' : ''}`)
                  : null
              ),
              h('td', { 'data-label': 'Online' }, onlineDot(box)),
              h('td', { 'data-label': 'Cameras' }, cameraDots(box), problemsText(box) ? h('small', { class: 'sub problem' }, problemsText(box)) : null),
              h('td', { 'data-label': 'Version' }, versionText(box)),
              h('td', { 'data-label': 'Last seen', title: formatTime(box.lastSeenAt) }, formatAgo(box.lastSeenAt, now)),
              h('td', { 'data-label': 'Local IP' }, box.localIp ?? '—'),
              h('td', { 'data-label': 'Area' }, box.area ? names.get(box.area.id) ?? box.area.id : '—')
            )
          )
        )
      )
    )
  }
  const fleet = h('section', { 'aria-label': 'The fleet at a glance' })
  const load = async () => {
    try {
      void ctx.session
        .call<FleetSummary>('GET', '/apis/v2/admin/fleet')
        .then((summary) => show(fleet, fleetSummary(summary)))
        .catch(() => undefined)
      boxes = await ctx.session.all<ReplayServer>(ADMIN)
      problem.textContent = ''
      draw()
    } catch (err) {
      problem.textContent = `The boxes could not be loaded: ${(err as Error).message}`
    }
  }
  statusFilter.addEventListener('change', draw)
  areaFilter.addEventListener('change', draw)
  show(
    main,
    heading('Recording boxes'),
    fleet,
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, field('Status', statusFilter), field('Area', areaFilter)),
    problem,
    results
  )
  void areaNames(ctx)
    .then(({ areas, names: byId }) => {
      names = byId
      areaFilter.append(...areas.map((a) => h('option', { value: a.id }, a.name)))
      draw()
    })
    .catch(() => undefined)
  void load()
  return every(REFRESH_MS, load)
}

