// The pages as files a server answers: read once at start, each asset under a folder named by the
// hash of all of them, so a browser may keep an asset for a year and a new build is fetched at once.
// No framework and no bundler: the browser loads the compiled ES modules as they are.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export type PageName = 'console' | 'box'

export interface PageFile {
  body: Buffer
  type: string
  headers: Record<string, string>
}

export interface Page {
  /** The page itself (HTML), to serve at its address. */
  html: PageFile
  /** Where the assets are, below the page's prefix: `assets/<hash>`. */
  assetsPath: string
  /** An asset by its path below `assetsPath` (`console/main.js`), or undefined. */
  asset(path: string): PageFile | undefined
}

/**
 * What to answer for a file: 304 when the browser's copy (If-None-Match) is this one, else the file.
 * Both programs send it with their own framework's reply.
 */
export function answerFor(file: PageFile, ifNoneMatch: string | undefined): { statusCode: 200 | 304; headers: Record<string, string>; body?: Buffer } {
  const headers = { 'content-type': file.type, ...file.headers }
  if (file.headers.etag !== undefined && ifNoneMatch === file.headers.etag) return { statusCode: 304, headers }
  return { statusCode: 200, headers, body: file.body }
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png'
}

/**
 * Only the page's own origin: no CDN, no web font, no inline script. Snapshots are fetched as blobs,
 * so images may also be blob: URLs.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; " +
  "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  // Pages change with every build and carry no data: always revalidated.
  'cache-control': 'no-cache',
  'x-frame-options': 'DENY'
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : [path]
  })
}

/**
 * Loads a page: public/<name>.html, public/*.css and the compiled modules of pages/<name> and
 * pages/shared. `base` is the page's own address ending in a slash (`/console/`, `/`): the HTML names
 * its assets relative to it.
 */
export function loadPage(name: PageName, base: string): Page {
  const sources = [
    ...files(join(ROOT, 'public')).filter((p) => extname(p) !== '.html').map((p) => ({ path: p, from: join(ROOT, 'public') })),
    ...['shared', name].flatMap((folder) =>
      files(join(ROOT, 'dist', 'pages', folder)).filter((p) => p.endsWith('.js')).map((p) => ({ path: p, from: join(ROOT, 'dist', 'pages') }))
    )
  ]
  const assets = new Map<string, PageFile>()
  const hash = createHash('sha256')
  for (const { path, from } of sources) {
    const body = readFileSync(path)
    const key = relative(from, path).split(sep).join('/')
    hash.update(key).update('\0').update(body)
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    assets.set(key, {
      body,
      type: TYPES[extname(path)] ?? 'application/octet-stream',
      headers: { 'cache-control': 'public, max-age=31536000, immutable', etag }
    })
  }
  const assetsPath = `assets/${hash.digest('hex').slice(0, 16)}`
  const template = readFileSync(join(ROOT, 'public', `${name}.html`), 'utf8')
  const html = Buffer.from(template.replaceAll('{{assets}}', `${base}${assetsPath}`))
  return {
    html: { body: html, type: 'text/html; charset=utf-8', headers: PAGE_HEADERS },
    assetsPath,
    asset: (path) => assets.get(path)
  }
}
