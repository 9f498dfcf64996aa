/** `uri` with `params` added to its query, keeping the query it already has byte for byte. */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const added = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined))
  const separator = !uri.includes('?') ? '?' : uri.endsWith('?') || uri.endsWith('&') ? '' : '&'
  return `${uri}${separator}${added.toString()}`
}
