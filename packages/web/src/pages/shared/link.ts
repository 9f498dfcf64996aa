// What the pages behind a mailed link share: the link's token taken out of the address bar at once
// (no history entry, no Referer, no screenshot of it) and kept in this tab only, so a reload still
// works; the platform's error message of an answer; and the one-card look of such a page.
import { h, show, type Child } from './dom.js'

/** The token of the link that opened the page (or of the earlier load in this tab), or null. */
export function tokenFromLink(storageKey: string): string | null {
  const fromLink = new URLSearchParams(location.search).get('token')
  if (fromLink) {
    sessionStorage.setItem(storageKey, fromLink)
    history.replaceState(null, '', location.pathname)
  }
  return sessionStorage.getItem(storageKey)
}

/** The platform's error message of an answer, or its status line when it has none. */
export async function messageOf(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { message?: string }
    return body.message ?? res.statusText
  } catch {
    return res.statusText
  }
}

/** Shows a page of one narrow card, the look of the pages behind a link. */
export function showCard(root: Element, ...children: Child[]): void {
  show(root, h('main', { id: 'main' }, h('div', { class: 'card narrow' }, ...children)))
}
