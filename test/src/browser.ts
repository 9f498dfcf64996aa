// The web pages in a real browser: the distribution's Chromium (installed by scripts/bootstrap.mjs)
// driven by playwright-core, which downloads no browser of its own. Every test page gets a fresh
// profile, a record of every request it made (to prove nothing left the page's origin) and a
// folder for screenshots people can look at after a run.
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Where screenshots go: test/output/screenshots (ignored by git; CI keeps the workspace). */
export const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'output', 'screenshots')

/** A phone in portrait, held in one hand: touch, a small viewport, a dense screen. */
export const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
  userAgent:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36'
}

/** A laptop: what an admin at the club's desk uses. */
export const LAPTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } }

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * Headless Chromium for one test file. The flags keep it from reaching for Google's services, which
 * this machine's closed network refuses many times a second; --no-sandbox because CI runs as root.
 */
export async function launchBrowser(t: Teardown): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage'
    ]
  })
  t.teardown(() => browser.close())
  return browser
}

export interface RecordedPage {
  context: BrowserContext
  page: Page
  /** Every URL the page requested, in order (documents, scripts, images, fetches, media). */
  requests: string[]
  /** Requests to any origin but `origin`: an empty list is what a page for offline venues needs. */
  foreignRequests(origin: string): string[]
  /** Writes SCREENSHOTS/<name>.png of the whole page and answers its path. */
  screenshot(name: string): Promise<string>
}

/** A fresh context (its own storage) and page that records its requests. */
export async function openPage(browser: Browser, options: BrowserContextOptions = PHONE): Promise<RecordedPage> {
  const context = await browser.newContext(options)
  const page = await context.newPage()
  const requests: string[] = []
  context.on('request', (request) => requests.push(request.url()))
  return {
    context,
    page,
    requests,
    foreignRequests(origin) {
      const own = new URL(origin).origin
      return requests.filter((url) => {
        // data: and blob: URLs are made by the page itself; they fetch nothing.
        if (url.startsWith('data:') || url.startsWith('blob:')) return false
        return new URL(url).origin !== own
      })
    },
    async screenshot(name) {
      mkdirSync(SCREENSHOTS, { recursive: true })
      const path = join(SCREENSHOTS, `${name}.png`)
      await page.screenshot({ path, fullPage: true })
      return path
    }
  }
}

/** Opens the console at `baseUrl` and signs in as `user`. */
export async function signIntoConsole(page: Page, baseUrl: string, user: { email: string; password: string }): Promise<void> {
  await page.goto(`${baseUrl}/console`)
  await page.getByLabel('E-mail').fill(user.email)
  await page.getByLabel('Password').fill(user.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/** Signs `user` in to the console at `base` (a server's origin) and opens the section named `section` in its navigation. */
export async function consoleSection(page: Page, base: string, user: { email: string; password: string }, section: string): Promise<void> {
  await signIntoConsole(page, base, user)
  await page.getByRole('link', { name: section }).click()
}
