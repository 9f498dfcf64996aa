// Replays: every replay staff may see, by status, with its download link once it is ready (each link
// handed out is a row of the footage access log), under the notice of what is recorded.
import type { ReplayCollection, ReplayStatus } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatBytes, formatTime } from '../shared/format.js'
import type { PageView } from './main.js'
import { footageNotice } from './footage.js'
import { listTable, pager } from './paging.js'

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
          : listTable(
              ['Asked', 'Court', 'Camera', 'Status', 'Length', 'Size', 'Download'],
              answer.items.map((r) => [
                formatTime(r.createdDate),
                r.court.id,
                r.camera.id,
                r.reason ? `${r.status} (${r.reason.replace(/_/g, ' ')})` : r.status,
                r.durationSeconds !== null ? `${r.durationSeconds.toFixed(1)} s` : '—',
                r.sizeBytes !== null ? formatBytes(r.sizeBytes) : '—',
                r.downloadUrl ? h('a', { href: r.downloadUrl, download: '' }, 'Download') : '—'
              ])
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
  show(main, heading('Replays'), footageNotice(ctx), h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, field('Status', status)), problem, results)
  void load()
}
