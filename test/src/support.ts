// Real parts for the end-to-end tests: a server on a loopback port, a looping test camera, the agent
// as its own process (as systemd runs it), ffprobe.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
// The services plugin declares app.db on Fastify's instance type.
import type {} from '@club/server/plugins/services'
import { buildApp } from '@club/server'
import { createTestPostgresDatabase, ManualClock, testConfig, userWithToken, type TestApp } from '@club/server/testing'

const execFileAsync = promisify(execFile)
const require = createRequire(import.meta.url)

// Without ffmpeg every test here would fail minutes in with `spawn ffmpeg ENOENT`: say so at once.
for (const tool of ['ffmpeg', 'ffprobe']) {
  if (spawnSync(tool, ['-version'], { stdio: 'ignore' }).error) {
    process.stderr.write(`${tool} is missing: run \`pnpm bootstrap\` (node scripts/bootstrap.mjs) to install it, or see the README's Quick start\n`)
    process.exit(1)
  }
}
export const AGENT_MAIN = join(dirname(require.resolve('@club/agent/package.json')), 'dist', 'main.js')

export interface Teardown {
  teardown(fn: () => unknown): void
}

export function tempDir(t: Teardown, prefix = 'club-e2e-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * The API over a SQLite file in `dir`, or over a database of its own on the throwaway PostgreSQL
 * when the suite runs there (through scripts/postgres.mjs), on the real clock (the agent and ffmpeg live
 * in real time). A restart keeps the database; the cluster and its databases go when the run ends.
 */
export class TestServer {
  app?: Awaited<ReturnType<typeof buildApp>>
  port = 0
  #database?: string

  /** `env`: settings over the tests' defaults; `port`: a fixed one (links the server sends name it). */
  constructor(readonly dir: string, readonly env: Record<string, string> = {}, port = 0) {
    this.port = port
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  async start(): Promise<void> {
    this.#database ??= (await createTestPostgresDatabase())?.url
    const database: Record<string, string> = this.#database ? { DATABASE_URL: this.#database } : {}
    // Known before the app is built: PUBLIC_BASE_URL is the origin a box's key proof must name.
    if (this.port === 0) this.port = await freePort()
    const settings = { REPLAY_POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'warn', PUBLIC_BASE_URL: this.url, ...database, ...this.env }
    this.app = await buildApp({ config: testConfig(this.dir, settings) })
    await this.app.listen({ port: this.port, host: '127.0.0.1' })
    this.port = (this.app.server.address() as AddressInfo).port
  }

  async stop(): Promise<void> {
    await this.app?.close()
    this.app = undefined
  }

  /** An admin's Authorization header. */
  async admin(): Promise<string> {
    return (await this.user('admin')).authorization
  }

  /** A user of `role`: their e-mail and password (to sign in as a person does) and an Authorization header. */
  async user(role: 'member' | 'staff' | 'admin'): Promise<{ id: string; email: string; password: string; authorization: string }> {
    const app = this.app!
    const ctx = { app, clock: new ManualClock(new Date().toISOString()), config: testConfig(this.dir), dir: this.dir, logs: () => '' } as TestApp
    return userWithToken(ctx, role)
  }

  /** A court of `areaId`, inserted directly. */
  async court(areaId: string): Promise<string> {
    const now = new Date().toISOString()
    const id = crypto.randomUUID()
    await this.app!.db.insertInto('courts').values({ id, area_id: areaId, pod_id: null, name: 'Court 1', slug: `court-${id}`, created_at: now, updated_at: now }).execute()
    return id
  }

  /** An area to approve boxes for, inserted directly (the venue endpoints are another module's). */
  async area(): Promise<string> {
    const db = this.app!.db
    const now = new Date().toISOString()
    const regionId = crypto.randomUUID()
    const id = crypto.randomUUID()
    await db.insertInto('regions').values({ id: regionId, name: 'North', slug: `north-${regionId}`, created_at: now, updated_at: now }).execute()
    await db.insertInto('areas').values({ id, region_id: regionId, name: 'Centre Court', slug: `area-${id}`, created_at: now, updated_at: now }).execute()
    return id
  }

  async call(method: string, path: string, authorization: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    const text = await res.text()
    return { status: res.status, json: text ? JSON.parse(text) : null }
  }
}

/**
 * A started server (stopped on teardown) with an admin, a member of staff, a member and one area of two
 * courts: where the replay tests begin.
 */
export async function serverWithTwoCourts(t: Teardown, dir: string, env: Record<string, string> = {}, port = 0) {
  const server = new TestServer(dir, env, port)
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.admin()
  const staff = await server.user('staff')
  const member = await server.user('member')
  const areaId = await server.area()
  const courtA = await server.court(areaId)
  const courtB = await server.court(areaId)
  return { server, admin, staff, member, areaId, courtA, courtB }
}

async function ffmpeg(args: string[]): Promise<void> {
  await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args])
}

/**
 * A camera stand-in: 320x240 at 15 fps with a keyframe every second and G.711 audio (what IP cameras
 * send), looped in real time by the agent's file:// feed.
 */
export async function testCameraFile(dir: string, name = 'camera.mkv', size = '320x240'): Promise<string> {
  const path = join(dir, name)
  await ffmpeg([
    '-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=15`, '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=8000',
    '-t', '10', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '15', '-pix_fmt', 'yuv420p', '-c:a', 'pcm_mulaw', path
  ])
  return path
}

export async function logoFile(dir: string): Promise<string> {
  const path = join(dir, 'logo.png')
  await ffmpeg(['-f', 'lavfi', '-i', 'color=c=red:size=64x32', '-frames:v', '1', path])
  return path
}

/** One second of a different size and frame rate than the camera's, with audio. */
export async function postrollFile(dir: string): Promise<string> {
  const path = join(dir, 'postroll.mp4')
  await ffmpeg([
    '-f', 'lavfi', '-i', 'smptebars=size=160x120:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=880:sample_rate=44100',
    '-t', '1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', path
  ])
  return path
}

export interface Probe {
  duration: number
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }>
  /** The file's chapter marks: start in seconds and title. */
  chapters: Array<{ start: number; title: string }>
}

export async function ffprobe(path: string): Promise<Probe> {
  const { stdout } = await execFileAsync('ffprobe', ['-v', 'error', '-of', 'json', '-show_format', '-show_streams', '-show_chapters', path])
  const parsed = JSON.parse(stdout)
  const chapters = ((parsed.chapters ?? []) as Array<{ start_time: string; tags?: { title?: string } }>).map((c) => ({ start: Number(c.start_time), title: c.tags?.title ?? '' }))
  return { duration: Number(parsed.format.duration), streams: parsed.streams, chapters }
}

/** Decodes the whole file; answers ffmpeg's complaints (empty when the file is sound). */
export async function decodeErrors(path: string): Promise<string> {
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', path, '-f', 'null', '-'])
  return stderr.trim()
}

/**
 * Polls `check` until it answers a value (not undefined, null or false). The bound is for what never
 * comes: beside the suite's other stage a box took over 30 s to register, so it is two minutes.
 */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      const value = await check()
      if (value !== undefined && value !== null && value !== false) return value
    } catch (err) {
      lastError = err
    }
    await sleep(250)
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`)
}

export interface AgentSettings {
  serverUrl: string
  dir: string
  deviceId: string
  httpPort: number
  extra?: Record<string, unknown>
}

/** club-agent as its own process, with a configuration file in `dir`. */
export class TestAgent {
  proc?: ChildProcess
  /** What the agent wrote since the test last emptied it. */
  output = ''
  private transcript = ''
  password?: string
  cookie?: string
  readonly stateDir: string
  readonly recordingsDir: string
  readonly clipsDir: string
  readonly configPath: string

  constructor(readonly settings: AgentSettings) {
    this.stateDir = join(settings.dir, 'state')
    this.recordingsDir = join(settings.dir, 'recordings')
    this.clipsDir = join(settings.dir, 'clips')
    this.configPath = join(settings.dir, 'agent.json')
    mkdirSync(settings.dir, { recursive: true })
    writeFileSync(this.configPath, JSON.stringify({
      serverUrl: settings.serverUrl,
      stateDir: this.stateDir,
      recordingsDir: this.recordingsDir,
      clipsDir: this.clipsDir,
      deviceId: settings.deviceId,
      displayName: 'E2E box',
      publicUrl: this.url,
      httpHost: '127.0.0.1',
      httpPort: settings.httpPort,
      segmentSeconds: 2,
      // A call to the server in this test process: on a loaded machine it can take seconds, and each
      // one cut short doubles the wait before the next (2, 4, 8 s...). No test waits for it to expire.
      requestTimeoutSeconds: 30,
      ...settings.extra
    }))
  }

  get url(): string {
    return `http://127.0.0.1:${this.settings.httpPort}`
  }

  start(): void {
    const proc = spawn(process.execPath, [AGENT_MAIN, '--config', this.configPath], { stdio: ['ignore', 'pipe', 'pipe'] })
    const keep = (d: Buffer) => {
      this.output += d
      this.transcript += d
    }
    proc.stdout!.on('data', keep)
    proc.stderr!.on('data', keep)
    this.proc = proc
  }

  /**
   * When `t` fails, everything the agent wrote (its log, across restarts) goes to the test's stderr,
   * which tap shows: an answer such as a 500 is explained only there.
   */
  showOutputOnFailure(t: Teardown & { passing(): boolean }): void {
    t.teardown(() => {
      if (!t.passing()) process.stderr.write(`--- the agent's output ---\n${this.transcript}\n--- end of the agent's output ---\n`)
    })
  }

  /** SIGTERM, then the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const proc = this.proc
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return proc?.exitCode ?? null
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
    proc.kill(signal)
    return exited
  }

  /** Runs `club-agent local-password` as the installer would, while the agent runs; answers the password. */
  async newLocalPassword(): Promise<string> {
    const { stdout } = await execFileAsync(process.execPath, [AGENT_MAIN, 'local-password', '--config', this.configPath])
    this.password = stdout.trim()
    this.cookie = undefined
    return this.password
  }

  /** Signs in with the local password; the session cookie is kept for the next calls. */
  async signIn(): Promise<string> {
    if (!this.password) await this.newLocalPassword()
    const res = await fetch(`${this.url}/session`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: this.password })
    })
    if (res.status !== 204) throw new Error(`sign-in answered ${res.status}`)
    this.cookie = res.headers.get('set-cookie')!.split(';')[0]!
    return this.cookie
  }

  /** The box's state, read as the installer does (a session cookie; signed in again after a restart). */
  async health(): Promise<any> {
    if (!this.cookie) await this.signIn()
    let res = await fetch(`${this.url}/health`, { headers: { cookie: this.cookie! } })
    if (res.status === 401) {
      await this.signIn()
      res = await fetch(`${this.url}/health`, { headers: { cookie: this.cookie! } })
    }
    if (res.status !== 200) throw new Error(`health answered ${res.status}`)
    return res.json()
  }

  /** The server's credential: the device's access token from the state file. */
  bearer(): { authorization: string } {
    return { authorization: `Bearer ${this.state().accessToken}` }
  }

  state(): { serverId?: string; accessToken?: string } {
    return JSON.parse(readFileSync(join(this.stateDir, 'state.json'), 'utf8'))
  }

  /** Finished segments of a camera (those ffmpeg listed), oldest first. */
  finishedSegments(cameraId: string): string[] {
    const dir = join(this.recordingsDir, cameraId)
    let names: string[] = []
    try {
      names = readdirSync(dir)
    } catch {
      return []
    }
    return names
      .filter((n) => n.endsWith('.csv'))
      .flatMap((n) => readFileSync(join(dir, n), 'utf8').split('\n').filter(Boolean).map((line) => join(dir, line.split(',')[0]!)))
      .sort()
  }
}
