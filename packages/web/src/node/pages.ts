// The pages as files a server answers: read once at start, each asset under a folder named by the
// hash of all of them, so a browser may keep an asset for a year and a new build is fetched at once.
// No framework and no bundler: the browser loads the compiled ES modules as they are.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The pages with an HTML file of their own in public/. */
export type PageName = 'console' | 'box' | 'password-reset' | 'enrollment-invitation'
/** Every page's folder of modules: the court page's HTML is written by the server for each request. */
export type PageFolder = PageName | 'court'

export interface PageFile {
  body: Buffer
  type: string
  headers: Record<string, string>
  /** 200 unless said: a page saying in words that there is no such court is a 404. */
  statusCode?: number
}

export interface PageAssets {
  /** Where the assets are, below the page's prefix: `assets/<hash>`. */
  assetsPath: string
  /** An asset by its path below `assetsPath` (`console/main.js`), or undefined. */
  asset(path: string): PageFile | undefined
}

export interface Page extends PageAssets {
  /** The page itself (HTML), to serve at its address. */
  html: PageFile
}

/** What sendPage needs of a framework's reply; Fastify's has it. */
export interface PageReply {
  code(statusCode: number): PageReply
  headers(values: Record<string, string>): PageReply
  send(body?: Buffer): unknown
}

/**
 * Sends a file: 304 without a body when the browser's copy (If-None-Match) is this one, else the
 * file with its headers. The server and the agent send every page file through it.
 */
export function sendPage<R extends PageReply>(reply: R, file: PageFile, ifNoneMatch: string | undefined): R {
  const headers = { 'content-type': file.type, ...file.headers }
  if (file.headers.etag !== undefined && ifNoneMatch === file.headers.etag) reply.code(304).headers(headers).send()
  else reply.code(file.statusCode ?? 200).headers(headers).send(file.body)
  return reply
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
 * so images may also be blob: URLs. `changes` replaces or adds directives for a page that needs
 * something else (the court page plays clips from the club's bucket).
 */
export function contentSecurityPolicy(changes: Record<string, string> = {}): string {
  const directives: Record<string, string> = {
    'default-src': "'none'",
    'script-src': "'self'",
    'style-src': "'self'",
    'img-src': "'self' blob: data:",
    'connect-src': "'self'",
    'form-action': "'none'",
    'frame-ancestors': "'none'",
    'base-uri': "'none'",
    ...changes
  }
  return Object.entries(directives)
    .map(([name, value]) => `${name} ${value}`)
    .join('; ')
}

/**
 * A file served under a name that changes with its content (`name` gives its type by extension):
 * browsers keep it a year, and a forced reload gets a 304 by its ETag.
 */
export function assetFile(name: string, body: Buffer): PageFile {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  return {
    body,
    type: TYPES[extname(name)] ?? 'application/octet-stream',
    headers: { 'cache-control': 'public, max-age=31536000, immutable', etag }
  }
}

const PAGE_HEADERS = {
  'content-security-policy': contentSecurityPolicy(),
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
 * A page's assets: public/*.css and the compiled modules of pages/<folder> and pages/shared, each
 * under a folder named by the hash of all of them.
 */
export function loadAssets(folder: PageFolder): PageAssets {
  const sources = [
    ...files(join(ROOT, 'public')).filter((p) => extname(p) !== '.html').map((p) => ({ path: p, from: join(ROOT, 'public') })),
    ...['shared', folder].flatMap((name) =>
      files(join(ROOT, 'dist', 'pages', name)).filter((p) => p.endsWith('.js')).map((p) => ({ path: p, from: join(ROOT, 'dist', 'pages') }))
    )
  ]
  const assets = new Map<string, PageFile>()
  const hash = createHash('sha256')
  for (const { path, from } of sources) {
    const body = readFileSync(path)
    const key = relative(from, path).split(sep).join('/')
    hash.update(key).update('\0').update(body)
    assets.set(key, assetFile(path, body))
  }
  return { assetsPath: `assets/${hash.digest('hex').slice(0, 16)}`, asset: (path) => assets.get(path) }
}

/**
 * Loads a page: public/<name>.html and its assets (loadAssets). `base` is the page's own address
 * ending in a slash (`/console/`, `/`): the HTML names its assets relative to it.
 */
export function loadPage(name: PageName, base: string): Page {
  const assets = loadAssets(name)
  const template = readFileSync(join(ROOT, 'public', `${name}.html`), 'utf8')
  const html = Buffer.from(template.replaceAll('{{assets}}', `${base}${assets.assetsPath}`))
  return { ...assets, html: { body: html, type: 'text/html; charset=utf-8', headers: PAGE_HEADERS } }
}
