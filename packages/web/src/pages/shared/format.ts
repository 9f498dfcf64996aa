// How numbers and times read on the pages: pure, so they are tested without a browser.

/** 1536 → "1.5 KB"; null → "unknown". Decimal-free below 10 of a unit would hide nothing useful. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return 'unknown'
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 0
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} bytes` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}

/** How long ago `iso` was, in words: "just now", "42 s ago", "5 min ago", "3 h ago", "2 days ago". */
export function formatAgo(iso: string | null | undefined, now: number): string {
  if (!iso) return 'never'
  const seconds = Math.round((now - Date.parse(iso)) / 1000)
  if (!Number.isFinite(seconds)) return 'unknown'
  if (seconds < 5) return 'just now'
  if (seconds < 90) return `${seconds} s ago`
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86400)} days ago`
}

/** A timestamp as the reader's local date and time, to the second. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
}
