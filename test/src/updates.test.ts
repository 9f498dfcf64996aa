// A box's updates end to end, without systemd: a real server holds releases of the real agent
// (packaged in this run with different versions), and a harness plays the service manager: it
// installs a package by extracting it (dpkg-deb -x) into a versions folder and restarts the agent
// from there, and runs the agent's own installer logic when the agent asks for it (updateCommand).
// The installer's clock moves only while the agent is down: "5 minutes without a poll" without
// waiting 5 minutes, and never while a healthy agent is starting.
// The agent is built once; each version is that package repacked with another version, gzip -1
// (the release build's xz is for downloads over a venue's line, not for a test). The packages run the
// test's Node (--node system): which runtime runs the agent changes nothing in an update, and the
// bundled one is checked by agent/src/update/package.test.ts and a real install (agent/README.md).
import t from 'tap'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'
import { generateKeyPairSync, sign } from 'node:crypto'
import { releaseSignedText } from '@club/contract'
import { runCli } from '@club/server/cli'
import { UpdateInstaller } from '@club/agent/dist/update/installer.js'
import { TestServer, freePort, tempDir, testCameraFile, waitFor } from './support.js'

const require = createRequire(import.meta.url)
const agentDir = join(require.resolve('@club/agent/package.json'), '..')
const ADMIN = '/apis/v2/admin/replay-servers'

/** A proxy in front of the server that cuts the first package download halfway. */
function cuttingProxy(target: string): Promise<{ server: Server; url: string; ranges: string[] }> {
  const ranges: string[] = []
  let cut = false
  const server = createServer((req, res) => {
    const upstream = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (up: IncomingMessage) => {
      const isPackage = req.url!.includes('/agent-releases/') && req.method === 'GET' && !req.url!.endsWith('/key')
      if (isPackage) ranges.push(String(req.headers.range ?? 'none'))
      res.writeHead(up.statusCode!, up.headers)
      if (isPackage && !cut) {
        cut = true
        const half = Number(up.headers['content-length']) / 2
        let sent = 0
        up.on('data', (chunk: Buffer) => {
          if (sent >= half) return
          const part = chunk.subarray(0, Math.min(chunk.length, half - sent))
          sent += part.length
          res.write(part)
          if (sent >= half) res.socket?.destroy()
        })
        return
      }
      up.pipe(res)
    })
    req.pipe(upstream)
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ranges }))
  )
}

t.test('a box updates from the server, refuses what was not signed, waits for its court, rolls back what does not start', async (t) => {
  const dir = tempDir(t, 'club-updates-')
  // The release key is made and used offline, as docs/installing-a-box.md says: the server is only told its public half.
  const club = async (...args: string[]) => {
    let out = ''
    let err = ''
    const code = await runCli(args, {}, (s) => (out += s), (s) => (err += s))
    if (code !== 0) throw new Error(`club ${args.join(' ')}: ${err}`)
    return JSON.parse(out)
  }
  const offline = join(dir, 'offline')
  const keyFile = join(offline, 'release-key.pem')
  const { publicKeySetting } = await club('agent-releases', 'keygen', '--out', keyFile)
  const server = new TestServer(dir, { AGENT_RELEASES_DIR: join(dir, 'releases'), AGENT_RELEASE_PUBLIC_KEYS: publicKeySetting })
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.admin()

  // The real agent, deployed once and packaged as several releases; 1.3.0 exits at start.
  const { deployAgent, buildPackage, repackage } = (await import(join(agentDir, 'packaging', 'build.mjs'))) as {
    deployAgent: (into?: string) => string
    buildPackage: (o: { from: string; version: string; outDir: string; node: 'system'; compression: 'gzip' }) => string
    repackage: (o: { deb: string; version: string; outDir: string; compression: 'gzip'; edit?: (root: string) => void }) => string
  }
  const debsDir = join(dir, 'debs')
  const debs: Record<string, string> = { '1.0.0': buildPackage({ from: deployAgent(join(dir, 'deploy')), version: '1.0.0', outDir: debsDir, node: 'system', compression: 'gzip' }) }
  for (const version of ['1.1.0', '1.1.1', '1.2.0', '1.4.0']) debs[version] = repackage({ deb: debs['1.0.0']!, version, outDir: debsDir, compression: 'gzip' })
  debs['1.3.0'] = repackage({
    deb: debs['1.0.0']!,
    version: '1.3.0',
    outDir: debsDir,
    compression: 'gzip',
    edit: (root) => writeFileSync(join(root, 'usr', 'lib', 'club-agent', 'dist', 'main.js'), "console.error('club-agent: cannot start'); process.exit(3)\n")
  })

  const upload = async (file: string) => {
    await club('agent-releases', 'sign', file, '--key', keyFile)
    const res = await fetch(`${server.url}/apis/v2/admin/agent-releases`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/vnd.debian.binary-package', 'x-release-signature': readFileSync(`${file}.sig`, 'utf8').trim() },
      body: readFileSync(file)
    })
    return { status: res.status, json: (await res.json()) as any }
  }
  for (const version of Object.keys(debs)) t.equal((await upload(debs[version]!)).status, 201, `release ${version} stored`)
  t.equal((await upload(debs['1.0.0']!)).status, 409, 'the same version twice is refused')
  const listed = await server.call('GET', '/apis/v2/admin/agent-releases', admin)
  t.same(listed.json.items.map((r: any) => r.version).sort(), ['1.0.0', '1.1.0', '1.1.1', '1.2.0', '1.3.0', '1.4.0'])
  t.equal(listed.json.items[0].architecture, 'all')

  // 1.1.0's stored file gets one byte changed; 1.1.1's signature is made with another key.
  const stored110 = join(dir, 'releases', 'club-agent_1.1.0_all.deb')
  const bytes = readFileSync(stored110)
  bytes[bytes.length - 100] ^= 0xff
  writeFileSync(stored110, bytes)
  const other = generateKeyPairSync('ed25519').privateKey
  const row111 = await server.app!.db.selectFrom('agent_releases').select(['version', 'architecture', 'sha256']).where('version', '=', '1.1.1').executeTakeFirstOrThrow()
  await server.app!.db
    .updateTable('agent_releases')
    .set({ signature: sign(null, Buffer.from(releaseSignedText(row111)), other).toString('base64') })
    .where('version', '=', '1.1.1')
    .execute()

  // The box: its public key from the server (what setup writes), behind the cutting proxy.
  const proxy = await cuttingProxy(server.url)
  t.teardown(() => proxy.server.close())
  const boxDir = join(dir, 'box')
  mkdirSync(boxDir, { recursive: true })
  const publicKey = ((await (await fetch(`${server.url}/apis/v2/agent-releases/key`)).json()) as any).publicKey as string
  writeFileSync(join(boxDir, 'release-key.pem'), publicKey)

  // The harness: the service manager and the installer unit.
  const versionsDir = join(dir, 'versions')
  let proc: ChildProcess | undefined
  let exited = false
  let output = ''
  const installs: string[] = []
  const configPath = join(boxDir, 'agent.json')
  const triggerPort = await freePort()
  writeFileSync(join(dir, 'trigger.mjs'), "await fetch(`${process.argv[2]}/${process.argv[3]}`, { method: 'POST' })\n")
  // ffmpeg for the agent: the real one, but an export (writing into clipsDir) waits while the gate exists.
  const gate = join(dir, 'export-gate')
  const ffmpegGate = join(dir, 'ffmpeg-gate.sh')
  writeFileSync(
    ffmpegGate,
    `#!/bin/sh\ncase "$*" in *${join(boxDir, 'clips')}*) while [ -e ${gate} ]; do touch ${gate}.reached; sleep 0.1; done ;; esac\nexec ffmpeg "$@"\n`,
    { mode: 0o755 }
  )
  const agentPort = await freePort()
  const agentUrl = `http://127.0.0.1:${agentPort}`
  const deviceId = `update-box-${Date.now()}`
  writeFileSync(
    configPath,
    JSON.stringify({
      serverUrl: proxy.url,
      stateDir: join(boxDir, 'state'),
      recordingsDir: join(boxDir, 'recordings'),
      clipsDir: join(boxDir, 'clips'),
      deviceId,
      httpHost: '127.0.0.1',
      httpPort: agentPort,
      requestTimeoutSeconds: 5,
      ffmpegPath: ffmpegGate,
      releaseKeyPath: join(boxDir, 'release-key.pem'),
      updateCommand: `${process.execPath} ${join(dir, 'trigger.mjs')} http://127.0.0.1:${triggerPort} "$1"`
    })
  )
  const stopAgent = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((resolve) => proc!.once('exit', resolve))
      proc.kill('SIGTERM')
      await gone
    }
  }
  const startAgent = (version: string) => {
    const main = join(versionsDir, version, 'usr', 'lib', 'club-agent', 'dist', 'main.js')
    exited = false
    proc = spawn(process.execPath, [main, '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] })
    proc.stdout!.on('data', (d) => (output += d))
    proc.stderr!.on('data', (d) => (output += d))
    proc.once('exit', () => (exited = true))
  }
  // The version installed now: each run of the installer is a new process of the installed package.
  let installedVersion = '1.0.0'
  const install = async (file: string) => {
    const version = /club-agent_([^_]+?)(_all)?\.deb$/.exec(file)![1]!
    installs.push(version)
    installedVersion = version
    await stopAgent()
    const into = join(versionsDir, version)
    if (!existsSync(into)) {
      mkdirSync(into, { recursive: true })
      execFileSync('dpkg-deb', ['-x', file, into])
    }
    startAgent(version)
  }
  t.teardown(stopAgent)
  t.teardown(() => writeFileSync(join(dir, '..', 'club-updates-agent.log'), output))
  let virtualMs = 0
  const installerFor = () => new UpdateInstaller({
    stateDir: join(boxDir, 'state'),
    installerStateDir: join(dir, 'installer-state'),
    installedVersion,
    publicKeyPem: publicKey,
    packages: { install },
    clock: {
      now: () => new Date(Date.now() + virtualMs),
      // Time passes only while the agent is down, as if it crashed in a loop for 5 minutes.
      sleep: async (ms) => {
        await new Promise((resolve) => setTimeout(resolve, 20))
        if (exited) virtualMs += ms
      }
    },
    log: (line) => (output += `installer: ${line}\n`),
    checkEveryMs: 2000
  })
  const triggered: string[] = []
  let installing: Promise<unknown> = Promise.resolve()
  const trigger = createServer((req, res) => {
    const version = decodeURIComponent(req.url!.slice(1))
    triggered.push(version)
    installing = installerFor().run(version).catch((err) => (output += `installer failed: ${err.stack}\n`))
    res.end()
  })
  await new Promise<void>((resolve) => trigger.listen(triggerPort, '127.0.0.1', resolve))
  t.teardown(() => trigger.close())

  // The box runs 1.0.0, as its installer put it there.
  await install(debs['1.0.0']!)
  installs.length = 0
  const box = await waitFor('the box registered', async () => {
    const list = await server.call('GET', `${ADMIN}?deviceId=${deviceId}`, admin)
    return list.json.items[0]
  })
  const areaId = await server.area()
  const courtId = await server.court(areaId)
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, { cleanupEnabled: false, cameras: [{ id: 'cam-1', feed: 'file:///nowhere.mkv', isEnabled: false, courtIds: [courtId] }] })
  const record = async () => (await server.call('GET', `${ADMIN}/${box.id}`, admin)).json
  await waitFor('the box reports 1.0.0 and its architecture', async () => {
    const b = await record()
    return b.version === '1.0.0' && b.architecture && b
  })
  const target = (version: string) => server.call('PUT', `${ADMIN}/${box.id}/target-version`, admin, { version })
  /** The box's record once it reports the update to `version` FAILED. */
  const failedUpdate = (version: string) =>
    waitFor(`FAILED ${version}`, async () => {
      const r = await record()
      return r.updateState === 'FAILED' && r.updateVersion === version && r
    }, 60_000)
  t.equal((await target('9.9.9')).status, 400, 'a version with no release is refused')

  await t.test('a release whose agent exits at start is rolled back to 1.0.0 and reported ROLLED_BACK', async (t) => {
    t.equal((await target('1.3.0')).status, 200)
    const b = await waitFor('ROLLED_BACK', async () => {
      const r = await record()
      return r.updateState === 'ROLLED_BACK' && r.version === '1.0.0' && r
    }, 40_000)
    t.equal(b.updateVersion, '1.3.0')
    t.match(b.updateReason, /did not reach the server within 5 minutes/)
    t.same(installs, ['1.3.0', '1.0.0'], 'the new package, then the previous one')
    // The first package download was cut halfway by the proxy; the box asked again with a Range.
    t.equal(proxy.ranges[0], 'none')
    t.match(proxy.ranges.slice(1).join(','), /bytes=\d+-/, 'the cut download resumed with a Range')
    const rolledBack = await server.call('GET', `${ADMIN}?updateState=ROLLED_BACK`, admin)
    t.same(rolledBack.json.items.map((i: any) => i.id), [box.id], 'the admin list filters by updateState')
    const count = triggered.length
    // Three polls later (each one where the box would be told to try again) nothing was tried again.
    const before = b.lastSeenAt
    const sightings = new Set<string>()
    await waitFor('three more polls', async () => {
      const { lastSeenAt } = await record()
      if (lastSeenAt !== before) sightings.add(lastSeenAt)
      return sightings.size >= 3
    })
    t.equal(triggered.length, count, 'a version that rolled back is not tried again')
  })

  await t.test('a tampered package and one signed with another key are refused, nothing installed', async (t) => {
    installs.length = 0
    t.equal((await target('1.1.0')).status, 200)
    const failed = await failedUpdate('1.1.0')
    t.match(failed.updateReason, /SHA-256/)
    t.equal((await target('1.1.1')).status, 200)
    const wrongKey = await failedUpdate('1.1.1')
    t.match(wrongKey.updateReason, /signature/)
    t.same(installs, [], 'nothing installed')
    t.equal(wrongKey.version, '1.0.0')
  })

  await t.test('waits while a clip export runs on the box, then goes straight from 1.0.0 to 1.2.0', async (t) => {
    installs.length = 0
    // The camera records; the export's ffmpeg (the one writing into clipsDir) is held at a gate the
    // test opens: an export that lasts as long as the test wants, whatever the machine's speed.
    const camera = await testCameraFile(dir, 'camera.mkv')
    await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, {
      cleanupEnabled: false,
      cameras: [{ id: 'cam-1', name: 'Court 1', feed: pathToFileURL(camera).href, isEnabled: true, courtIds: [courtId] }]
    })
    const segments = join(boxDir, 'recordings', 'cam-1')
    const finished = () =>
      existsSync(segments)
        ? readdirSync(segments).filter((n) => n.endsWith('.csv')).flatMap((n) => readFileSync(join(segments, n), 'utf8').split('\n').filter(Boolean))
        : []
    await waitFor('two finished segments', () => finished().length >= 2, 60_000)
    writeFileSync(gate, '')
    const end = new Date(Date.now() - 1500)
    const token = JSON.parse(readFileSync(join(boxDir, 'state', 'state.json'), 'utf8')).accessToken
    const exported = fetch(`${agentUrl}/clips`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ cameraId: 'cam-1', start: new Date(end.getTime() - 2000).toISOString(), end: end.toISOString() })
    })
    await waitFor('the export at the gate', () => existsSync(`${gate}.reached`), 30_000)
    t.equal((await target('1.2.0')).status, 200)
    await waitFor('WAITING_FOR_IDLE', async () => (await record()).updateState === 'WAITING_FOR_IDLE', 60_000)
    await waitFor('the wait for the export in the log', () => /"why":"1 clip export\(s\) running"/.test(output), 30_000)
    t.same(installs, [], 'nothing installed while the export runs')
    rmSync(gate)
    t.equal((await exported).status, 200, 'the export finished')
    const done = await waitFor('1.2.0 polling', async () => {
      const r = await record()
      return r.version === '1.2.0' && r.updateState === null && r
    }, 120_000)
    t.equal(done.targetVersion, '1.2.0')
    t.same(installs, ['1.2.0'], 'straight to the target, no version in between')
    await installing
    t.notOk(existsSync(join(boxDir, 'state', 'update.json')), 'nothing left to report')
  })

  await t.test('waits while an event on its court runs, then goes once it ended', async (t) => {
    installs.length = 0
    const now = Date.now()
    await server.app!.db.insertInto('events').values({
      id: 'e-1', name: 'Match', description: null, type: 'MATCH', subtype: null, tags: '[]',
      start_at: new Date(now - 60_000).toISOString(), end_at: new Date(now + 3_600_000).toISOString(), series_id: null, record_match: 0,
      created_at: new Date(now).toISOString(), updated_at: new Date(now).toISOString()
    }).execute()
    await server.app!.db.insertInto('event_refs').values({ event_id: 'e-1', kind: 'court', ref_id: courtId, position: 0 }).execute()
    t.equal((await target('1.4.0')).status, 200)
    await waitFor('WAITING_FOR_IDLE', async () => (await record()).updateState === 'WAITING_FOR_IDLE', 60_000)
    await waitFor('the wait for the event in the log', () => /"why":"an event on its courts runs /.test(output), 30_000)
    t.same(installs, [], 'nothing installed while the match runs')
    // The match ends.
    await server.app!.db.updateTable('events').set({ end_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', 'e-1').execute()
    const done = await waitFor('1.4.0 polling', async () => {
      const r = await record()
      return r.version === '1.4.0' && r.updateState === null && r
    }, 120_000)
    t.equal(done.targetVersion, '1.4.0')
    t.same(installs, ['1.4.0'], 'past 1.3.0 (rolled back on this box) straight to the target')
    await installing
  })

  await t.test('an older signed release, not the one the installer replaced, is refused: nothing installed', async (t) => {
    installs.length = 0
    t.equal((await target('1.0.0')).status, 200)
    const refused = await failedUpdate('1.0.0')
    t.match(refused.updateReason, /older than the installed 1\.4\.0, and not the version this installer replaced \(1\.2\.0\)/)
    t.equal(refused.version, '1.4.0')
    t.same(installs, [])
    await installing
  })
  t.ok(readdirSync(versionsDir).length >= 3)
})
