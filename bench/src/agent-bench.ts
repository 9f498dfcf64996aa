// `pnpm bench:agent`: the recording agent against the real server on loopback, with 1, 4 and 8
// cameras, each an ffmpeg serving pre-encoded 720p25 footage over HTTP by stream copy (as an IP
// camera, it costs the box next to nothing). Reports the agent process's own resident memory and CPU
// (its ffmpeg children excluded), the recording ffmpegs' CPU per camera, and how fast clips export
// (a minute plain, with logo and postroll, with the full correction chain; a 30-second replay with the
// full chain), while 8 cameras record and again with none recording, the load average beside each.
// Then the plain cuts (a minute and an hour of 720p, by copy) beside a hand-written concat copy of the
// same segments (`smart-cut.ts`); `BENCH_AGENT_ONLY=cuts` runs only those. `BENCH_AGENT_ONLY=replays`
// (issue 49's box rows): the agent's memory from its start with 8 cameras, a plain 30 s replay and one
// with logo and postroll from request to READY, and a corrected match's export beside 4 recorders.
// Bounded: every wait has a deadline, and every process started is stopped, also on failure.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { migrateToLatest, openDatabase } from '@club/server/db/database'
import { machine, repoRoot, startNode, table, writeResults, type Started } from './harness.js'
import { seedVenue } from './scenarios.js'
import { correctedMatch, cutTable, smartCutRows, type MatchRow } from './smart-cut.js'
import { seedUsers } from './seed.js'

/** Seconds each camera count is measured for, after the cameras are recording. */
const PHASE_SECONDS = Number(process.env.BENCH_AGENT_SECONDS ?? 30)
/** `cuts`: only the plain cuts against their concat copy (no server, no cameras: a minute or two); `replays`: see the top. */
const ONLY = process.env.BENCH_AGENT_ONLY
const CAMERA_COUNTS = (process.env.BENCH_AGENT_CAMERAS ?? (ONLY === 'replays' ? '8' : '1,4,8')).split(',').map(Number)
/** Seconds of the corrected match exported beside 4 recorders (its 60 minutes would take half an hour of a core). */
const MATCH_SECONDS = Number(process.env.BENCH_AGENT_MATCH_SECONDS ?? 60)
/** Extra Node options for the agent (e.g. --max-semi-space-size=1, to compare its memory). */
const AGENT_NODE_OPTIONS = process.env.BENCH_AGENT_NODE_OPTIONS
const CLIP_SECONDS = 60
const REPLAY_SECONDS = 30
/** The whole run is abandoned (and cleaned up) after this long. */
const DEADLINE_MS = Number(process.env.BENCH_AGENT_TIMEOUT ?? 1500) * 1000
/** Test footage, logo, postroll and LUT: encoded by the first run, reused by the next ones. */
const MEDIA_DIR = process.env.BENCH_AGENT_MEDIA ?? join(tmpdir(), 'club-agent-bench-media-v1')
const AGENT_MAIN = process.env.BENCH_AGENT_MAIN ?? join(repoRoot, 'agent', 'dist', 'main.js')
const FFMPEG = process.env.BENCH_FFMPEG ?? 'ffmpeg'
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim() || 100)
/** Turns of each plain cut and its concat copy; the medians are kept. */
const CUT_REPEAT = Number(process.env.BENCH_AGENT_CUT_REPEAT ?? 3)

const deadline = Date.now() + DEADLINE_MS
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Every process this run started, stopped in reverse order at the end whatever happens. */
const children: Array<{ name: string; stop(): Promise<void> }> = []

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Math.min(deadline, Date.now() + timeoutMs)
  for (;;) {
    const value = await check().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await sleep(500)
  }
}

function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(kill)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

function ffmpeg(args: string[]): void {
  const result = spawnSync(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  if (result.status !== 0) throw new Error(`ffmpeg ${args.join(' ')} failed: ${result.stderr?.toString() ?? result.error}`)
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as { port: number }
      server.close(() => resolve(address.port))
    })
  })
}

/**
 * The media every camera loops, the logo, the postroll and an identity 3D LUT, made once and kept in
 * MEDIA_DIR: encoding 20 s of 720p takes a core for several seconds, which a run should not spend.
 */
function cachedMedia() {
  const media = {
    source: join(MEDIA_DIR, 'camera.ts'),
    logo: join(MEDIA_DIR, 'logo.png'),
    postroll: join(MEDIA_DIR, 'postroll.mp4'),
    lut: join(MEDIA_DIR, 'identity.cube')
  }
  mkdirSync(MEDIA_DIR, { recursive: true })
  // Each file is made aside and renamed, so an interrupted run leaves none half made.
  const make = (path: string, write: (temporary: string) => void) => {
    if (existsSync(path)) return false
    const temporary = `${path}.${process.pid}.tmp${extname(path)}`
    write(temporary)
    renameSync(temporary, path)
    return true
  }
  const made = [
    make(media.source, (to) => ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25', '-t', '20', '-c:v', 'libx264', '-preset', 'veryfast', '-g', '50', '-pix_fmt', 'yuv420p', '-f', 'mpegts', to])),
    make(media.logo, (to) => ffmpeg(['-f', 'lavfi', '-i', 'color=c=white:s=200x80', '-frames:v', '1', to])),
    make(media.postroll, (to) => ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=1280x720:rate=25', '-t', '3', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-f', 'mp4', to])),
    make(media.lut, (to) => {
      const size = 2
      const lines = ['LUT_3D_SIZE 2']
      for (let b = 0; b < size; b++) for (let g = 0; g < size; g++) for (let r = 0; r < size; r++) lines.push(`${r} ${g} ${b}`)
      writeFileSync(to, `${lines.join('\n')}\n`)
    })
  ]
  return { ...media, encodedNow: made.some(Boolean) }
}

/**
 * A camera: ffmpeg serving the looped source over HTTP at its real rate. ffmpeg's HTTP server takes
 * one client and ends with it, so it is started again whenever it ends (a recorder that reconnects
 * finds its camera again).
 */
function startCamera(source: string, port: number) {
  let current: ChildProcess | undefined
  let stopped = false
  const run = () => {
    if (stopped) return
    current = spawn(
      FFMPEG,
      ['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', source, '-c', 'copy', '-f', 'mpegts', '-listen', '1', `http://127.0.0.1:${port}/stream.ts`],
      { stdio: 'ignore' }
    )
    current.once('exit', () => setTimeout(run, 200))
  }
  run()
  const camera = {
    name: `camera :${port}`,
    feed: `http://127.0.0.1:${port}/stream.ts`,
    stop: async () => {
      stopped = true
      if (current) await stopChild(current, 2000)
    }
  }
  children.push(camera)
  return camera
}

/** utime + stime of one process (not its children), in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name (which may hold spaces) start at field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

/**
 * cutime + cstime: the CPU of a process's children that have ended, in seconds. Across an export it
 * is the export's ffmpeg and ffprobes (the recorders run on): a figure the machine's load does not
 * change, where the export's wall time does.
 */
function endedChildrenCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS
}

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) / 1024 : NaN
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

interface AgentCamera {
  id: string
  state: string
  pid: number | null
}

async function main() {
  if (spawnSync(FFMPEG, ['-version']).status !== 0) throw new Error(`${FFMPEG} is needed (apt-get install ffmpeg)`)
  if (!existsSync(AGENT_MAIN)) throw new Error(`${AGENT_MAIN} is missing: build the agent first (npx tsc -b)`)
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-bench-'))
  children.push({ name: 'work folder', stop: async () => rmSync(dir, { recursive: true, force: true }) })
  const load1 = loadavg()[0]!
  const plainCuts = async () => {
    process.stdout.write(`plain cuts against a concat copy of the same segments, ${CUT_REPEAT} turns each…\n`)
    const rows = await smartCutRows({ ffmpeg: FFMPEG, mediaDir: MEDIA_DIR, workDir: join(dir, 'cuts'), repeat: CUT_REPEAT, clockTicks: CLOCK_TICKS, log: (line) => process.stdout.write(`${line}\n`) })
    process.stdout.write(`\n${table(cutTable(rows))}\ntargets: a plain 60 s cut >= 100x real time and within 2x of the concat copy; a plain 60-minute cut < 30 s\n`)
    return rows
  }
  if (ONLY === 'cuts') {
    try {
      const cuts = await plainCuts()
      const load2 = loadavg()[0]!
      process.stdout.write(`load average (1 min) before ${load1.toFixed(2)}, after ${load2.toFixed(2)} on ${cpus().length} cores\n`)
      process.stdout.write(`results written to ${writeResults('agent-cuts', { machine: machine(), loadAverage: { before: load1, after: load2 }, cuts })}\n`)
    } finally {
      for (const child of children.splice(0).reverse()) await child.stop().catch(() => undefined)
    }
    return
  }
  try {
    process.stdout.write(`preparing server and ${Math.max(...CAMERA_COUNTS)} cameras in ${dir}…\n`)
    const media = cachedMedia()
    process.stdout.write(`test footage ${media.encodedNow ? 'encoded into' : 'reused from'} ${MEDIA_DIR}\n`)

    const database = join(dir, 'club.db')
    const db = openDatabase(database)
    await migrateToLatest(db)
    const users = await seedUsers(db, 1, 1024)
    const { areaIds } = await seedVenue(db)
    await db.destroy()
    const server: Started = await startNode(join(repoRoot, 'server', 'dist', 'main.js'), {
      // info: startNode waits for Fastify's "Server listening at" line.
      LOG_LEVEL: 'info',
      DATABASE_URL: database,
      // The agent picks up each configuration change within a second.
      REPLAY_POLL_INTERVAL_SECONDS: '1'
    })
    children.push({ name: 'server', stop: () => server.stop() })
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}/apis/v2/admin/replay-servers${path}`, {
        method,
        headers: { authorization: `Bearer ${users.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
      return res.json() as Promise<any>
    }

    process.stdout.write(`server on ${server.url}\n`)
    const cameras = await Promise.all(Array.from({ length: Math.max(...CAMERA_COUNTS) }, async () => startCamera(media.source, await freePort())))

    const agentPort = await freePort()
    const agentUrl = `http://127.0.0.1:${agentPort}`
    const stateDir = join(dir, 'agent-state')
    const configPath = join(dir, 'agent.json')
    writeFileSync(
      configPath,
      JSON.stringify({
        serverUrl: server.url,
        stateDir,
        recordingsDir: join(dir, 'recordings'),
        clipsDir: join(dir, 'clips'),
        deviceId: 'bench-agent',
        httpHost: '127.0.0.1',
        httpPort: agentPort,
        // The server tells the box of a replay at once, here.
        publicUrl: agentUrl,
        logLevel: 'warn'
      })
    )
    mkdirSync(stateDir, { recursive: true })
    const agent = spawn(process.execPath, [...(AGENT_NODE_OPTIONS ? AGENT_NODE_OPTIONS.split(' ') : []), AGENT_MAIN, '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] })
    // Its resident memory every second from its start: where a peak comes from (start-up, cameras, replays).
    const agentStarted = performance.now()
    const rssSince: Array<[number, number]> = []
    const rssSampler = setInterval(() => {
      try {
        rssSince.push([round((performance.now() - agentStarted) / 1000), round(rssMb(agent.pid!))])
      } catch {
        // the agent has ended
      }
    }, 1000)
    children.push({ name: 'memory sampler', stop: async () => clearInterval(rssSampler) })
    let agentErr = ''
    // Its warnings (logLevel warn) in order, for the report: a replay retried, a cut by copy that fell back.
    const agentWarnings: string[] = []
    agent.stderr!.on('data', (d) => (agentErr = (agentErr + d).slice(-4000)))
    // Its log (pino, on stdout) is read as it comes, so the pipe never fills.
    agent.stdout!.on('data', (d) => agentWarnings.push(...String(d).split('\n').filter((line) => line.includes('"msg"')).map((line) => line.slice(0, 400))))
    // Its recorders are its children: a hard stop would orphan them, so their pids are kept too.
    const recorderPids = new Set<number>()
    children.push({
      name: 'agent',
      stop: async () => {
        stopping = true
        await stopChild(agent, 20_000)
        for (const pid of recorderPids) {
          try {
            process.kill(pid, 'SIGKILL')
          } catch {
            // already gone, as it should be
          }
        }
      }
    })
    let stopping = false
    agent.once('exit', (code, signal) => {
      if (!stopping) process.stderr.write(`agent exited early (code ${code}, signal ${signal}): ${agentErr}\n`)
    })

    process.stdout.write(`agent started on ${agentUrl}; waiting for its registration…\n`)
    const record = await until('the agent to register', async () => (await admin('GET', '?deviceId=bench-agent')).items[0] as { id: string } | undefined)
    await admin('POST', `/${record.id}/approve`, { areaId: areaIds[0] })
    const agentState = () => JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as { accessToken?: string; config?: Record<string, unknown> }

    // Camera 2 carries the whole correction chain. Recording is a stream copy, so corrections cost
    // nothing until a clip is exported; they are set from the start.
    const corrections = { distortion1: 0.12, distortion2: 0.04, rotation: 3, scale: 0.9, vignette: 0.5, lutPath: media.lut }
    // Disabled cameras record nothing and keep their footage and settings: clips can still be cut.
    const cameraConfig = (n: number, isEnabled = true) =>
      cameras.slice(0, n).map((c, i) => ({ id: `cam-${i + 1}`, name: `Court ${i + 1}`, feed: c.feed, isEnabled, audioCodec: 'none', ...(i === 1 ? corrections : {}) }))
    // The local API answers only with a credential: the box's own token, as the server calls it.
    const agentCameras = async () =>
      (await (await fetch(`${agentUrl}/cameras`, { headers: { authorization: `Bearer ${agentState().accessToken}` } })).json()) as AgentCamera[]

    const phases: Array<Record<string, number>> = []
    let firstRecording = 0
    for (const n of CAMERA_COUNTS) {
      await admin('PUT', `/${record.id}/config`, { cleanupEnabled: false, cameras: cameraConfig(n) })
      await until(`${n} cameras recording`, async () => {
        const list = await agentCameras()
        const live = list.filter((c) => c.state === 'recording' && c.pid !== null)
        return live.length === n && list.length === n ? true : undefined
      })
      firstRecording ||= Date.now()
      // A settling moment: ffmpeg's start (probing the feed) is not steady recording.
      await sleep(5000)
      const pids = (await agentCameras()).map((c) => c.pid!).filter(Boolean)
      pids.forEach((p) => recorderPids.add(p))
      const agentCpu0 = cpuSeconds(agent.pid!)
      const recCpu0 = pids.map(cpuSeconds)
      const rss: number[] = []
      const started = performance.now()
      while (performance.now() - started < PHASE_SECONDS * 1000) {
        rss.push(rssMb(agent.pid!))
        await sleep(1000)
      }
      const seconds = (performance.now() - started) / 1000
      const after = (await agentCameras()).filter((c) => c.state === 'recording')
      const samePids = pids.filter((p) => after.some((c) => c.pid === p))
      const recCpu = samePids.reduce((sum, p) => sum + cpuSeconds(p) - recCpu0[pids.indexOf(p)]!, 0)
      phases.push({
        cameras: n,
        agentCpuPercent: round(((cpuSeconds(agent.pid!) - agentCpu0) / seconds) * 100, 2),
        agentRssMbMax: round(Math.max(...rss)),
        agentRssMbMean: round(rss.reduce((a, b) => a + b, 0) / rss.length),
        recordingCpuPercentPerCamera: round((recCpu / seconds / Math.max(1, samePids.length)) * 100, 2),
        recordersRestarted: pids.length - samePids.length
      })
      process.stdout.write(`  ${n} camera(s): ${JSON.stringify(phases.at(-1))}\n`)
    }

    // Exports of camera 1 (plain, then with logo and postroll) and of camera 2 (the correction chain,
    // with logo and postroll): a minute, and a 30-second replay, first while every camera goes on
    // recording (as on a box), then with the cameras disabled (nothing else on the box's cores).
    const token = agentState().accessToken
    if (!token) throw new Error('the agent holds no access token')
    const exportClip = async (what: string, recording: number, cameraId: string, seconds: number, end: Date) => {
      const start = new Date(end.getTime() - seconds * 1000)
      const load = loadavg()[0]!
      const cpu = endedChildrenCpuSeconds(agent.pid!)
      const t = performance.now()
      const res = await fetch(`${agentUrl}/clips`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ cameraId, start: start.toISOString(), end: end.toISOString() }),
        signal: AbortSignal.timeout(Math.max(1000, Math.min(600_000, deadline - Date.now())))
      })
      const took = (performance.now() - t) / 1000
      const cpuSecondsUsed = endedChildrenCpuSeconds(agent.pid!) - cpu
      const body = (await res.json()) as { duration?: number; message?: string }
      if (!res.ok) throw new Error(`clip export of ${cameraId} answered ${res.status}: ${body.message}`)
      const result = { clip: what, camerasRecording: recording, footageSeconds: seconds, exportSeconds: round(took, 2), clipSeconds: round(body.duration ?? 0, 2), timesRealTime: round(seconds / took, 2), cpuSeconds: round(cpuSecondsUsed, 1), loadAverage: round(load, 2) }
      process.stdout.write(`  ${JSON.stringify(result)}\n`)
      return result
    }
    const all = Math.max(...CAMERA_COUNTS)
    const exports: Array<Awaited<ReturnType<typeof exportClip>>> = []
    let match: (MatchRow & { recordingCpuPercentBefore: number; recordingCpuPercentDuring: number; recordersRestarted: number }) | undefined
    const configure = async (body: Record<string, unknown>, what: string, check: (config: Record<string, unknown>) => boolean) => {
      await admin('PUT', `/${record.id}/config`, { cleanupEnabled: false, ...body })
      await until(what, async () => (check(agentState().config ?? {}) ? true : undefined))
    }
    const logo = { logoPath: media.logo, logoPlacement: 'top-right', postrollPath: media.postroll }
    const corrected = [
      ['logo + postroll', 'cam-1', CLIP_SECONDS],
      ['full correction chain + logo + postroll', 'cam-2', CLIP_SECONDS],
      [`${REPLAY_SECONDS} s replay, full correction chain + logo + postroll`, 'cam-2', REPLAY_SECONDS]
    ] as const
    if (ONLY !== 'replays') {
      // The clip ends 12 s ago (segments complete) and needs a minute before that.
      const footageFor = Date.now() - firstRecording
      if (footageFor < (CLIP_SECONDS + 15) * 1000) await sleep((CLIP_SECONDS + 15) * 1000 - footageFor)
      const recent = () => new Date(Date.now() - 12_000)
      exports.push(await exportClip('plain', all, 'cam-1', CLIP_SECONDS, recent()))
      await configure({ ...logo, cameras: cameraConfig(all) }, 'the agent to hold the logo configuration', (c) => Boolean(c.postrollPath))
      for (const [what, camera, seconds] of corrected) exports.push(await exportClip(what, all, camera, seconds, recent()))

      await configure({ ...logo, cameras: cameraConfig(all, false) }, 'the agent to hold the disabled cameras', (c) =>
        (c.cameras as Array<{ isEnabled?: boolean }>).every((camera) => camera.isEnabled === false))
      await until('every recorder to stop', async () => ((await agentCameras()).every((c) => c.state !== 'recording' && c.pid === null) ? true : undefined))
      // The last segments are whole once their recorder has stopped; a few seconds of margin.
      const stoppedAt = new Date(Date.now() - 3000)
      await sleep(5000)
      for (const [what, camera, seconds] of corrected) exports.push(await exportClip(what, 0, camera, seconds, stoppedAt))
      await configure({ cameras: cameraConfig(all, false) }, 'the agent to drop the logo', (c) => !c.postrollPath)
      exports.push(await exportClip('plain', 0, 'cam-1', CLIP_SECONDS, stoppedAt))
    }

    // A player's 30-second replay of the court camera 1 films into a file:// bucket, plain (a copy but
    // for its ends) and with logo and postroll (encoded whole): from POST /apis/v2/replays to READY
    // (the box waits replayFlushSeconds, 2.5 s, past the end first).
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${users.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
      return res.json() as Promise<any>
    }
    const court = await api('POST', '/apis/v2/admin/courts', { name: 'Court 1', area: { id: areaIds[0] } })
    const withCourt = (n: number) => cameraConfig(n).map((c, i) => (i === 0 ? { ...c, courtIds: [court.id] } : c))
    const bucket = `file://${join(dir, 'bucket')}`
    const replayRows: Array<Record<string, string | number>> = []
    const logoAndPostroll = { logoPath: media.logo, logoPlacement: 'top-right', postrollPath: media.postroll }
    for (const [what, extras] of [['plain', {}], ['logo + postroll', logoAndPostroll]] as const) {
      await admin('PUT', `/${record.id}/config`, { cleanupEnabled: false, ...extras, cloudStorageBucket: bucket, cameras: withCourt(all) })
      await until('the agent to hold the court configuration', async () => {
        const config = agentState().config as { cloudStorageBucket?: string; postrollPath?: string } | undefined
        return config?.cloudStorageBucket && Boolean(config.postrollPath) === 'postrollPath' in extras ? true : undefined
      })
      // The cameras were off for the exports above (not in the `replays` run): the replay needs its 30 s of new footage first.
      const since = Date.now()
      await until('every recorder to record again', async () => ((await agentCameras()).every((c) => c.state === 'recording') ? true : undefined))
      const recordingSince = ONLY === 'replays' ? firstRecording : since
      const wait = recordingSince + (REPLAY_SECONDS + 5) * 1000 - Date.now()
      if (wait > 0) await sleep(wait)
      const load = loadavg()[0]!
      const cpu = endedChildrenCpuSeconds(agent.pid!)
      const asked = performance.now()
      const replay = await api('POST', '/apis/v2/replays', { court: { id: court.id }, seconds: REPLAY_SECONDS })
      // `until` treats a throw as "not yet": a FAILED replay is answered as a value and thrown here.
      const settled = await until('the replay READY', async () => {
        const now = await api('GET', `/apis/v2/replays/${replay.id}`)
        return now.status === 'READY' || now.status === 'FAILED' ? now : undefined
      }, 120_000)
      if (settled.status === 'FAILED') throw new Error(`the ${what} replay failed: ${settled.reason}`)
      replayRows.push({
        replay: `${REPLAY_SECONDS} s, ${what}, file:// bucket`,
        'request → READY s': round((performance.now() - asked) / 1000, 2),
        'clip s': round(settled.durationSeconds, 2),
        'ffmpeg CPU s': round(endedChildrenCpuSeconds(agent.pid!) - cpu, 2),
        'load (1 min) at start': round(load, 2)
      })
      process.stdout.write(`  ${JSON.stringify(replayRows.at(-1))}\n`)
    }

    if (ONLY === 'replays') {
      // A corrected match beside 4 recorders: their CPU over the export against the same span before it.
      await admin('PUT', `/${record.id}/config`, { cleanupEnabled: false, cameras: cameraConfig(4) })
      await until('4 cameras recording', async () => {
        const list = await agentCameras()
        return list.length === 4 && list.every((c) => c.state === 'recording' && c.pid !== null) ? true : undefined
      })
      await sleep(5000)
      const pids = (await agentCameras()).map((c) => c.pid!)
      pids.forEach((p) => recorderPids.add(p))
      const recordersCpu = () => pids.reduce((sum, p) => sum + cpuSeconds(p), 0)
      const before0 = recordersCpu()
      const beforeStart = performance.now()
      await sleep(15_000)
      const before = (recordersCpu() - before0) / ((performance.now() - beforeStart) / 1000) / pids.length
      process.stdout.write(`corrected match of ${MATCH_SECONDS} s (nice 19, one filter thread) beside 4 recorders…\n`)
      const during0 = recordersCpu()
      const duringStart = performance.now()
      const row = await correctedMatch({ ffmpeg: FFMPEG, mediaDir: MEDIA_DIR, workDir: join(dir, 'match'), lut: media.lut, seconds: MATCH_SECONDS, clockTicks: CLOCK_TICKS })
      const during = (recordersCpu() - during0) / ((performance.now() - duringStart) / 1000) / pids.length
      const still = (await agentCameras()).filter((c) => c.state === 'recording' && pids.includes(c.pid!)).length
      match = { ...row, recordingCpuPercentBefore: round(before * 100, 2), recordingCpuPercentDuring: round(during * 100, 2), recordersRestarted: pids.length - still }
      process.stdout.write(`  ${JSON.stringify(match)}\n`)
    }

    const cuts = ONLY === 'replays' ? [] : await plainCuts()

    const load2 = loadavg()[0]!
    process.stdout.write(
      `\n${table(
        phases.map((p) => ({
          cameras: p.cameras!,
          'agent CPU % of a core': p.agentCpuPercent!,
          'agent RSS MB (max)': p.agentRssMbMax!,
          'recording CPU % per camera': p.recordingCpuPercentPerCamera!,
          'recorder restarts': p.recordersRestarted!
        }))
      )}\n\n${table(
        exports.map((e) => ({
          clip: e.clip,
          'cameras recording': e.camerasRecording,
          'footage s': e.footageSeconds,
          'export s': e.exportSeconds,
          'output s (with postroll)': e.clipSeconds,
          'x real time': e.timesRealTime,
          'ffmpeg CPU s': e.cpuSeconds,
          'load (1 min) at start': e.loadAverage
        }))
      )}\n`
    )
    process.stdout.write(`${table(replayRows)}\n`)
    if (match) {
      process.stdout.write(`${table([{
        'corrected match s': match.footageSeconds,
        'export s': match.exportSeconds,
        'x real time': match.timesRealTime,
        'CPU s': match.cpuSeconds,
        'CPU s per s of footage': match.cpuPerFootageSecond,
        'cores held': match.coresUsed,
        'recorder CPU % before / during': `${match.recordingCpuPercentBefore} / ${match.recordingCpuPercentDuring}`,
        'load (1 min) at start': match.loadAverage
      }])}\n`)
    }
    const firstSeconds = rssSince.filter(([at]) => at <= 30).map(([, mb]) => mb)
    process.stdout.write(`agent RSS from its start (s, MB): ${JSON.stringify(rssSince.filter(([at]) => at <= 60 || at % 10 < 1))}\n`)
    process.stdout.write(`agent RSS max in its first 30 s ${Math.max(...firstSeconds)} MB, max after ${Math.max(...rssSince.filter(([at]) => at > 30).map(([, mb]) => mb))} MB\n`)
    process.stdout.write(
      `targets: a plain 30 s replay request → READY < 3 s, with logo and postroll < 15 s; a corrected 60-minute match >= 2x real time on at most one core; agent < 100 MB and < 2% of a core at 8 cameras; recording < 2% per camera; a minute with logo+postroll >= 4x real time, ` +
        `with the full chain >= 2x; the ${REPLAY_SECONDS} s replay with the full chain cut in < 15 s\n`
    )
    process.stdout.write(`load average (1 min) before ${load1.toFixed(2)}, after ${load2.toFixed(2)} on ${cpus().length} cores\n`)
    if (agentWarnings.length) process.stdout.write(`the agent's warnings:\n${agentWarnings.slice(-20).join('\n')}\n`)
    const file = writeResults(ONLY === 'replays' ? 'agent-replays' : 'agent', { machine: machine(), loadAverage: { before: load1, after: load2 }, phaseSeconds: PHASE_SECONDS, phases, exports, replays: replayRows, match, rssSince, agentNodeOptions: AGENT_NODE_OPTIONS ?? null, cuts })
    process.stdout.write(`results written to ${file}\n`)
  } finally {
    // The work folder was pushed first, so it goes last, once nothing writes into it.
    for (const child of children.splice(0).reverse()) await child.stop().catch(() => undefined)
  }
}

/** Stops the processes together, then removes the work folder (the first entry). */
async function stopAll(): Promise<void> {
  const [folder, ...processes] = children.splice(0)
  await Promise.all(processes.map((c) => c.stop().catch(() => undefined)))
  await folder?.stop().catch(() => undefined)
}
const abort = setTimeout(() => {
  process.stderr.write(`agent benchmark: over ${DEADLINE_MS / 1000}s, stopping\n`)
  void stopAll().then(() => process.exit(1))
}, DEADLINE_MS)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stopAll().then(() => process.exit(130)))
try {
  await main()
} catch (err) {
  process.stderr.write(`agent benchmark failed: ${(err as Error).stack ?? err}\n`)
  process.exitCode = 1
} finally {
  clearTimeout(abort)
}
