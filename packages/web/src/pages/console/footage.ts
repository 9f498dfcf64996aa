// The footage access log (admins): every look at footage, filtered by court, user and the minutes
// looked at, under the notice of what is recorded and for how long.
import type { FootageAccessCollection, FootageNotice } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatTime } from '../shared/format.js'
import type { Context, PageView } from './page.js'
import { listTable, pager } from './paging.js'
import { footageNoticeText, footageViewerText } from './view.js'

const IPP = 20

/** The notice, filled in once the server has said its figures. */
export function footageNotice(ctx: Context): HTMLElement {
  const notice = h('p', { class: 'notice', id: 'footage-notice' })
  ctx.session
    .call<FootageNotice>('GET', '/apis/v2/replays/footage-notice')
    .then((answer) => (notice.textContent = footageNoticeText(answer)))
    .catch((err: Error) => (notice.textContent = `What is recorded could not be loaded: ${err.message}`))
  return notice
}

/** A datetime-local value as an instant, or undefined when empty. */
function instant(input: HTMLInputElement): string | undefined {
  return input.value ? new Date(input.value).toISOString() : undefined
}

export const footageLog: PageView = (ctx, main) => {
  const court = h('input', { name: 'court', type: 'text', autocomplete: 'off' })
  const user = h('input', { name: 'user', type: 'text', autocomplete: 'off' })
  const from = h('input', { name: 'from', type: 'datetime-local', step: 1 })
  const to = h('input', { name: 'to', type: 'datetime-local', step: 1 })
  const results = h('div', { 'aria-live': 'polite' })
  const problem = liveRegion('alert')
  let page = 1
  const load = async () => {
    const filters = { court: court.value.trim() || undefined, user: user.value.trim() || undefined, from: instant(from), to: instant(to) }
    const query = new URLSearchParams({ page: String(page), ipp: String(IPP) })
    for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value)
    try {
      const answer = await ctx.session.call<FootageAccessCollection>('GET', `/apis/v2/admin/footage-access?${query}`)
      problem.textContent = ''
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No look at footage matches.')
          : listTable(
              ['When', 'Who', 'What for', 'Court', 'Camera', 'Footage', 'Reason', 'Address'],
              answer.items.map((row) => [
                formatTime(row.date),
                footageViewerText(row),
                row.purpose.replace(/_/g, ' ').toLowerCase(),
                row.court?.id ?? '—',
                row.camera.id,
                `${formatTime(row.start)} – ${formatTime(row.end)}`,
                row.accessReason ?? '—',
                row.address ?? '—'
              ])
            ),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The footage log could not be loaded: ${(err as Error).message}`
    }
  }
  const search = (event: Event) => {
    event.preventDefault()
    page = 1
    void load()
  }
  show(
    main,
    heading('Footage log'),
    footageNotice(ctx),
    h(
      'form',
      { class: 'filters', role: 'search', onsubmit: search },
      field('Court id', court),
      field('User id', user),
      field('Footage from', from, 'Looks at minutes overlapping this interval'),
      field('Footage to', to),
      h('button', { type: 'submit' }, 'Filter')
    ),
    problem,
    results
  )
  void load()
}
