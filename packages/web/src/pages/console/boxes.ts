// Recording boxes: the fleet list (pending first, then by area), and what the list and one box's page
// (box-page.ts) share: badges, the refresh timer, area names.
import type { Area, ReplayServer, ReplayServerStatus } from '@club/contract'
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
        h('thead', {}, h('tr', {}, ['Box', 'Status', 'Online', 'Version', 'Last seen', 'Local IP', 'Area'].map((c) => h('th', { scope: 'col' }, c)))),
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
  const load = async () => {
    try {
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

