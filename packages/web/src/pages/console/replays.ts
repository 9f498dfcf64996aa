// Replays: every replay staff may see, by status, with its download link once it is ready.
import type { ReplayCollection, ReplayStatus } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatBytes, formatTime } from '../shared/format.js'
import type { PageView } from './main.js'
import { pager } from './paging.js'

const IPP = 20
const STATUSES: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY', 'FAILED', 'EXPIRED']

export const replayList: PageView = (ctx, main) => {
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s }, s)))
  const results = h('div', { 'aria-live': 'polite' })
  const problem = liveRegion('alert')
  let page = 1
  const load = async () => {
    const query = new URLSearchParams({ page: String(page), ipp: String(IPP), ...(status.value ? { status: status.value } : {}) })
    try {
      const answer = await ctx.session.call<ReplayCollection>('GET', `/apis/v2/replays?${query}`)
      problem.textContent = ''
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No replay matches.')
          : h(
              'table',
              { class: 'list' },
              h('thead', {}, h('tr', {}, ['Asked', 'Court', 'Camera', 'Status', 'Length', 'Size', 'Download'].map((c) => h('th', { scope: 'col' }, c)))),
              h(
                'tbody',
                {},
                answer.items.map((r) =>
                  h(
                    'tr',
                    {},
                    h('td', { 'data-label': 'Asked' }, formatTime(r.createdDate)),
                    h('td', { 'data-label': 'Court' }, r.court.id),
                    h('td', { 'data-label': 'Camera' }, r.camera.id),
                    h('td', { 'data-label': 'Status' }, r.reason ? `${r.status} (${r.reason.replace(/_/g, ' ')})` : r.status),
                    h('td', { 'data-label': 'Length' }, r.durationSeconds !== null ? `${r.durationSeconds.toFixed(1)} s` : '—'),
                    h('td', { 'data-label': 'Size' }, r.sizeBytes !== null ? formatBytes(r.sizeBytes) : '—'),
                    h('td', { 'data-label': 'Download' }, r.downloadUrl ? h('a', { href: r.downloadUrl, download: '' }, 'Download') : '—')
                  )
                )
              )
            ),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The replays could not be loaded: ${(err as Error).message}`
    }
  }
  status.addEventListener('change', () => {
    page = 1
    void load()
  })
  show(main, heading('Replays'), h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, field('Status', status)), problem, results)
  void load()
}
