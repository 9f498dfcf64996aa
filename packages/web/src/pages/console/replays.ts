// Replays: every replay staff may see, by status and kind (a player's clip, or one camera's angle of a match), with its download link once it is ready (each link
// handed out is a row of the footage access log), under the notice of what is recorded, and a
// takedown (with the reason typed) for any of them.
import type { Replay, ReplayCollection, ReplayStatus } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatBytes, formatTime } from '../shared/format.js'
import type { PageView } from './page.js'
import { footageNotice } from './footage.js'
import { listTable, pager } from './paging.js'

const IPP = 20
const STATUSES: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY', 'FAILED', 'EXPIRED', 'TAKEN_DOWN']

/** What the status column says: the failure's reason, or the takedown's. */
export function statusText(replay: Pick<Replay, 'status' | 'reason' | 'takedown'>): string {
  if (replay.takedown?.reason) return `${replay.status} (${replay.takedown.reason})`
  return replay.reason ? `${replay.status} (${replay.reason.replace(/_/g, ' ')})` : replay.status
}

/** What the kind column says: a clip, or one angle of a match (its camera in the Camera column) with the match's chapters. */
export function kindText(replay: Pick<Replay, 'kind' | 'match' | 'chapters'>): string {
  if (replay.kind !== 'MATCH') return 'Clip'
  const chapters = replay.chapters?.length ?? 0
  return `Match ${replay.match?.id ?? ''} angle${chapters ? `, ${chapters} chapter${chapters === 1 ? '' : 's'}` : ''}`
}

export const replayList: PageView = (ctx, main) => {
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s }, s)))
  const kind = h('select', { name: 'kind' }, h('option', { value: '' }, 'Clips and matches'), h('option', { value: 'CLIP' }, 'Clips'), h('option', { value: 'MATCH' }, 'Match angles'))
  const results = h('div', { 'aria-live': 'polite' })
  const problem = liveRegion('alert')
  const done = liveRegion('status')
  let page = 1
  // A takedown deletes the clip at once: asked for in a small form of its own, with the reason required.
  const takedown = (r: Replay): HTMLElement => {
    if (r.status === 'TAKEN_DOWN') return h('span', {}, '—')
    const reason = h('input', { type: 'text', name: 'reason', required: true, maxlength: 500, 'aria-label': `Why replay ${r.id} is taken down` })
    return h(
      'form',
      {
        class: 'inline',
        onsubmit: async (e: Event) => {
          e.preventDefault()
          try {
            await ctx.session.call('POST', `/apis/v2/admin/replays/${encodeURIComponent(r.id)}/takedown`, { reason: reason.value })
            done.textContent = 'Replay taken down: its clip is deleted.'
            void load()
          } catch (err) {
            problem.textContent = `The replay could not be taken down: ${(err as Error).message}`
          }
        }
      },
      reason,
      h('button', { type: 'submit', class: 'danger' }, 'Take down')
    )
  }
  const load = async () => {
    const query = new URLSearchParams({ page: String(page), ipp: String(IPP), ...(status.value ? { status: status.value } : {}), ...(kind.value ? { kind: kind.value } : {}) })
    try {
      const answer = await ctx.session.call<ReplayCollection>('GET', `/apis/v2/replays?${query}`)
      problem.textContent = ''
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No replay matches.')
          : listTable(
              ['Asked', 'Kind', 'Court', 'Camera', 'Status', 'Length', 'Size', 'Download', 'Take down'],
              answer.items.map((r) => [
                formatTime(r.createdDate),
                kindText(r),
                r.court.id,
                r.camera.id,
                statusText(r),
                r.durationSeconds !== null ? `${r.durationSeconds.toFixed(1)} s` : '—',
                r.sizeBytes !== null ? formatBytes(r.sizeBytes) : '—',
                r.downloadUrl ? h('a', { href: r.downloadUrl, download: '' }, 'Download') : '—',
                takedown(r)
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
  for (const filter of [status, kind]) {
    filter.addEventListener('change', () => {
      page = 1
      void load()
    })
  }
  show(main, heading('Replays'), footageNotice(ctx), h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, field('Status', status), field('Kind', kind)), problem, done, results)
  void load()
}
