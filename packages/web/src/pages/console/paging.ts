// Paging controls and the table shared by the console's lists (templates, replays, the footage log).
import { h, type Child } from '../shared/dom.js'

export interface PageInfo {
  page: number
  ipp: number
  total: number
}

function pageCount(info: PageInfo): number {
  return Math.max(1, Math.ceil(info.total / info.ipp))
}

/** "Page 2 of 5" between Previous and Next buttons; a button that leads nowhere is disabled. */
export function pager(info: PageInfo, goTo: (page: number) => void): HTMLElement {
  const pages = pageCount(info)
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', disabled: info.page <= 1, onclick: () => goTo(info.page - 1) }, '← Previous'),
    h('span', { 'aria-live': 'polite' }, `Page ${info.page} of ${pages} (${info.total} in all)`),
    h('button', { type: 'button', disabled: info.page >= pages, onclick: () => goTo(info.page + 1) }, 'Next →')
  )
}

/** A list as a table: one header row, then each item's cells (labelled for the narrow layout). */
export function listTable(columns: readonly string[], rows: ReadonlyArray<readonly Child[]>): HTMLTableElement {
  return h(
    'table',
    { class: 'list' },
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h(
      'tbody',
      {},
      rows.map((cells) => h('tr', {}, cells.map((cell, i) => h('td', { 'data-label': columns[i] }, cell))))
    )
  )
}
