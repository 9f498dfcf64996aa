// Paged lists: `page` is 1-based, `ipp` items per page. Builds `_pagination`, `_total` and the
// `self`/`next`/`prev` links that every paged answer carries.
import type { Links, Pagination } from '@club/contract'

export const DEFAULT_IPP = 20
export const MAX_IPP = 100

export interface PageRequest {
  page: number
  ipp: number
  offset: number
}

export function pageRequest(query: { page?: number; ipp?: number }): PageRequest {
  const page = query.page ?? 1
  const ipp = query.ipp ?? DEFAULT_IPP
  return { page, ipp, offset: (page - 1) * ipp }
}

/**
 * The paged envelope for `items` out of `total` matches. `path` is the list's path and `query` the
 * request's filters, repeated in every link so that following `next` keeps them.
 */
export function paged<T>(
  items: T[],
  total: number,
  request: PageRequest,
  path: string,
  query: Record<string, string | number | boolean | string[] | undefined>
): { items: T[]; _pagination: Pagination; _total: number; _links: Links } {
  const href = (page: number) => {
    const params = new URLSearchParams()
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || key === 'page' || key === 'ipp') continue
      // A repeated filter (category=A&category=B) is repeated in the link too.
      if (Array.isArray(value)) for (const each of value) params.append(key, each)
      else params.set(key, String(value))
    }
    params.set('page', String(page))
    params.set('ipp', String(request.ipp))
    return { href: `${path}?${params.toString()}` }
  }
  const lastPage = Math.max(1, Math.ceil(total / request.ipp))
  const links: Links = { self: href(request.page) }
  if (request.page < lastPage) links.next = href(request.page + 1)
  if (request.page > 1) links.prev = href(Math.min(request.page - 1, lastPage))
  return {
    items,
    _pagination: { page: request.page, ipp: request.ipp, count: items.length, total },
    _total: total,
    _links: links
  }
}

/** The collection shape for a list answered whole (no pages): every item, their count, and `self`. */
export function collection<T>(items: T[], self: string): { items: T[]; _total: number; _links: Links } {
  return { items, _total: items.length, _links: { self: { href: self } } }
}
