/** `uri` with `params` added to its query, keeping the query it already has byte for byte. */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const added = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined))
  const separator = !uri.includes('?') ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&'
  return `${uri}${separator}${added.toString()}`
}

/**
 * A page of the web front end a mail links to (`password-reset`, `enrollment-invitation`), below
 * PUBLIC_BASE_URL (never the request's Host), with the mail's single-use token in its query.
 */
export function pageLink(publicBaseUrl: string, page: string, token: string): string {
  const url = new URL(page, publicBaseUrl.endsWith('/') ? publicBaseUrl : `${publicBaseUrl}/`).toString()
  return withQuery(url, { token })
}
