// A camera's problem in words, from what ffmpeg wrote to stderr when it gave up: the reasons an
// operator can act on get a short fixed phrase, anything else is ffmpeg's own last meaningful line.
// Feeds carry credentials (rtsp://user:pass@…) and ffmpeg repeats the feed's URL in its errors: no
// phrase this answers ever holds a URL's user, password or query.

/** The longest problem a health report carries (the contract's limit). */
export const PROBLEM_MAX_LENGTH = 200

/** ffmpeg's words → the phrase the operator reads; the first that matches any line wins. */
const KNOWN: ReadonlyArray<[RegExp, string | ((m: RegExpExecArray) => string)]> = [
  [/(?:Server returned|method \w+ failed:|HTTP error) ([45]\d\d)\b/i, (m) => `${m[1]} from the camera`],
  [/authorization failed|\bUnauthorized\b/i, '401 from the camera'],
  [/Connection refused/i, 'connection refused'],
  [/\btimed out\b/i, 'connection timed out'],
  [/No such file or directory/i, 'no such file'],
  [/Failed to resolve hostname|Name or service not known|Temporary failure in name resolution/i, "the camera's host name is not known"],
  [/No route to host|Network is unreachable/i, 'the camera is not reachable (no route)'],
  [/Connection reset by peer|End of file/i, 'the camera closed the connection'],
  [/Invalid data found when processing input|moov atom not found/i, 'invalid data from the camera']
]

/** Lines that say nothing about why: ffmpeg's progress, its closing words, banners. */
const NOISE = /^(?:frame=|size=|video:|Exiting normally|Conversion failed!|Press \[q\]|ffmpeg version|built with|configuration:|lib\w+\s+\d|\s*$)/

const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/\S*/gi

/** Any URL's user, password (up to its last @, so a password holding / or @ goes too) and query removed: `rtsp://u:p@host/x?token=1` → `rtsp://host/x`. */
export function withoutCredentials(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)\S*@/gi, '$1')
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#]*)[?#][^\s]*/gi, '$1')
}

/** What an ffmpeg that exited 0 without a known reason was told: its input ended (a camera that closed the stream or lost power mid-stream). */
export const STREAM_ENDED = 'the camera ended its stream'

/**
 * The problem in words of a camera whose ffmpeg exited with `stderr` (its last lines); null when
 * stderr says nothing. A known reason is its phrase; else, when ffmpeg exited 0 (`endedCleanly`), its
 * input ended and its last lines are only warnings of the run ("Too many bits… clamping"), so
 * STREAM_ENDED; else the last meaningful line without the `[demuxer @ 0x…]` prefix, credentials
 * removed, at most PROBLEM_MAX_LENGTH characters.
 */
export function summariseFfmpegError(stderr: string, endedCleanly = false): string | null {
  const lines = stderr.split(/\r?\n|\s\|\s/).map((l) => l.trim()).filter((l) => l && !NOISE.test(l))
  // The last line is ffmpeg's verdict (the input's URL and the error); earlier ones say what led to it.
  for (const line of [...lines].reverse()) {
    // Matched without its URLs: a password or a path may hold "401" or "timed out".
    const bare = line.replace(URL_PATTERN, 'URL')
    for (const [pattern, phrase] of KNOWN) {
      const m = pattern.exec(bare)
      if (m) return typeof phrase === 'string' ? phrase : phrase(m)
    }
  }
  if (endedCleanly) return STREAM_ENDED
  const last = lines.at(-1)
  if (!last) return null
  return trimTo(withoutCredentials(last.replace(/^\[[^\]]*@ 0x[0-9a-f]+\]\s*/i, '')), PROBLEM_MAX_LENGTH)
}

export function trimTo(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}
