// Paging controls shared by the templates and replays lists.
import { h } from '../shared/dom.js'

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
