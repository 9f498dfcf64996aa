// The template and replay-server volumes, seeded through the server's own services so that every
// row, reference, search entry and version record is exactly what the API would have written, and
// the scenarios that read them.
import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto'
import { deviceTokenKey, MAX_WAITING_BOXES, registerReplayServer } from '@club/server/replay-servers/service'
import { approveReplayServer, setReplayServerConfig } from '@club/server/replay-servers/decisions'
import { createTemplate, patchTemplate } from '@club/server/templates/service'
import type { Clock } from '@club/server/clock'
import type { Db } from '@club/server/db/database'
import { boxHealthSignatureText, boxKeyAdoptionText, boxKeyProofText, type BoxHealthReport, type TemplateStatus } from '@club/contract'
import { load, type LoadResult, type Started } from './harness.js'
import type { SeededMemberships } from './memberships.js'
import type { SeededPackages } from './packages.js'
import type { SeededUsers } from './seed.js'

export interface Seeded {
  users: SeededUsers
  /** Bearer tokens of staff and admin users: the template routes refuse members. */
  staffTokens: string[]
  templateIds: string[]
  areaIds: string[]
  /** Templates per area, to choose a deep page that exists. */
  perArea: number
  /** A phrase that about 1% of template names contain. */
  searchTerm: string
  searchMatches: number
  /** serverIds of approved boxes with a configuration. */
  serverIds: string[]
  /** The ETag each of those boxes last received, filled in once the server runs. */
  etags: string[]
  /** serverIds of approved boxes with a replay waiting (their answers carry replayRequests). */
  waitingServerIds?: string[]
  /** Approved boxes registered with a box key, which sign every poll (a health report is kept only from those). */
  keyedBoxes?: KeyedBox[]
  /** Membership subscriptions to read, and the CHARGE job's due date (bench/src/memberships.ts). */
  memberships?: SeededMemberships
  /** One package per member to redeem from (bench/src/packages.ts). */
  packages?: SeededPackages
}

export interface Scenario {
  name: string
  /** The share of the bare (no logger) baseline's requests per second this route is held to, if any. */
  target?: number
  /** The share of the pino baseline's requests per second this route is held to, if any. */
  pinoTarget?: number
  /** What the caches-off row is held to: a share of the bare baseline, a p99 latency. */
  uncached?: { target?: number; p99Ms?: number }
  /** The 99th percentile latency this route is held under, in ms. */
  p99Ms?: number
  /** Also measured at each size of the growth check (with the read caches off: it measures the indexes). */
  growth?: boolean
  /** Answered from a read cache: measured a second time against a server with READ_CACHE_ENTRIES=0. */
  cached?: boolean
  run(server: Started, seeded: Seeded, durationSeconds: number, connections: number): Promise<LoadResult>
}

const pick = <T>(list: T[], i: number): T => list[i % list.length]!

/** A clock one second ahead on every reading, so that templates get distinct updated_at values. */
function steppingClock(start = Date.parse('2026-01-01T00:00:00Z')): Clock {
  let t = start
  return { now: () => new Date((t += 1000)) }
}

const SPORTS = ['Padel', 'Tennis', 'Squash', 'Badminton', 'Pickleball', 'Table tennis', 'Volleyball', 'Basketball', 'Futsal', 'Netball']
const GROUPS = ['Junior', 'Senior', 'Ladies', 'Mens', 'Mixed', 'Beginners', 'Improvers', 'Advanced', 'Veterans', 'Family']
const KINDS = ['clinic', 'league', 'social', 'lesson', 'tournament', 'camp']
const STATUSES: TemplateStatus[] = ['DRAFT', 'PUBLISHED', 'PUBLISHED', 'PUBLISHED', 'ARCHIVED']

export interface Venue {
  areaIds: string[]
}

/** 5 regions with 10 areas each, inserted directly (the venue routes are not what is measured). */
export async function seedVenue(db: Db): Promise<Venue> {
  const now = new Date().toISOString()
  const areaIds: string[] = []
  await db.transaction().execute(async (tx) => {
    for (let r = 0; r < 5; r++) {
      const regionId = randomUUID()
      await tx.insertInto('regions').values({ id: regionId, name: `Region ${r}`, slug: `region-${r}`, created_at: now, updated_at: now }).execute()
      for (let a = 0; a < 10; a++) {
        const id = randomUUID()
        areaIds.push(id)
        await tx.insertInto('areas').values({ id, region_id: regionId, name: `Area ${r}.${a}`, slug: `area-${r}-${a}`, created_at: now, updated_at: now }).execute()
      }
    }
  })
  return { areaIds }
}

/**
 * Grows the templates to a given count, so that the growth check can measure at 1,000 and 10,000
 * and the main run at 100,000 with one seeding. Each template is created, half are patched once
 * and a fifth twice more, so about 1.7 versions each. The services open their own transaction per
 * change (they cannot nest in an outer one); with WAL and synchronous=NORMAL a commit costs no
 * fsync, which keeps that affordable.
 */
export class TemplateSeeder {
  readonly ids: string[] = []
  private readonly clock = steppingClock()
  private readonly actors: Array<{ id: string }>

  constructor(
    private readonly db: Db,
    private readonly venue: Venue,
    staffIds: string[]
  ) {
    this.actors = staffIds.map((id) => ({ id }))
  }

  async seedTo(count: number): Promise<number> {
    const started = performance.now()
    for (let i = this.ids.length; i < count; i++) {
      const actor = pick(this.actors, i)
      const sport = SPORTS[i % SPORTS.length]!
      const group = GROUPS[Math.floor(i / SPORTS.length) % GROUPS.length]!
      const kind = KINDS[i % KINDS.length]!
      const areas = [pick(this.venue.areaIds, i * 7), ...(i % 3 === 0 ? [pick(this.venue.areaIds, i * 7 + 1)] : [])]
      const template = await createTemplate(
        this.db,
        {
          type: i % 10 < 7 ? 'EVENT' : 'SERIES',
          name: `${sport} ${group} ${kind} ${i}`,
          ...(i % 4 === 0 ? {} : { description: `Weekly ${kind} for ${group.toLowerCase()} players, ${sport.toLowerCase()} courts.` }),
          status: 'DRAFT',
          data: { subtype: kind, durationMinutes: 60 + (i % 4) * 30, tags: [sport.toLowerCase(), group.toLowerCase()] },
          areas: { items: [...new Set(areas)].map((id) => ({ id })) }
        },
        actor,
        this.clock
      )
      this.ids.push(template.id)
      if (i % 2 === 0) await patchTemplate(this.db, template.id, { status: pick(STATUSES, i) }, actor, this.clock)
      if (i % 5 === 0) await patchTemplate(this.db, template.id, { data: { ...template.data, durationMinutes: 45 } }, actor, this.clock)
    }
    return performance.now() - started
  }

  /** Templates per area: each template is in one area, every third in two. */
  perArea(): number {
    return Math.floor((this.ids.length * (4 / 3)) / this.venue.areaIds.length)
  }
}

/** The phrase the search scenario looks for: one sport and group pair, about 1% of names. */
export const SEARCH_TERM = `${SPORTS[3]} ${GROUPS[4]}`

/**
 * `count` boxes registered through the service; nine in ten approved for an area with a two-camera
 * configuration, the rest left pending. Answers the approved boxes' serverIds; the pending boxes'
 * go into `pending` when given (the evening polls them too), fewer than MAX_WAITING_BOXES of them:
 * the server drops the oldest box never approved beyond that (each new registration waits too until
 * approved), so the rest are approved and every box seeded still polls.
 */
export async function seedReplayServers(db: Db, count: number, venue: Venue, pending?: string[], keyed?: KeyedSeeding): Promise<string[]> {
  const clock = { now: () => new Date() }
  const deps = { clock, tokenKey: await deviceTokenKey(db, { DEVICE_TOKEN_SECRET: '' }, clock), pollIntervalSeconds: 30 }
  const audience = keyed?.audience ?? 'http://127.0.0.1'
  const serverIds: string[] = []
  for (let i = 0; i < count; i++) {
    const deviceId = `bench-box-${i}`
    const key = keyed ? newBoxKey(deviceId, audience) : undefined
    const { serverId } = await registerReplayServer(
      db,
      { deviceId, hostname: `box-${i}`, version: '1.0.0', localIp: `10.0.${i >> 8}.${i & 255}`, ...(key ? { publicKey: key.publicKey, keyProof: key.keyProof } : {}) },
      { sourceIp: '127.0.0.1', audience },
      deps
    )
    if (key) keyed!.keys.set(serverId, { serverId, publicKey: key.publicKey, privateKey: key.privateKey, lastSigned: 0 })
    if (i % 10 === 9 && (pending === undefined || pending.length < MAX_WAITING_BOXES - 1)) {
      pending?.push(serverId)
      continue
    }
    const { id } = await db.selectFrom('replay_servers').select('id').where('device_id', '=', deviceId).executeTakeFirstOrThrow()
    await approveReplayServer(db, id, { areaId: pick(venue.areaIds, i) }, deps)
    await setReplayServerConfig(
      db,
      id,
      {
        cleanupEnabled: true,
        cameras: cameraNumbers(keyed?.cameras ?? 2).map((n) => ({ id: `cam-${n}`, name: `Court ${n}`, feed: `rtsp://10.0.${i >> 8}.${i & 255}:554/stream${n}` }))
      },
      deps
    )
    serverIds.push(serverId)
  }
  return serverIds
}

/** Boxes registered with a key of their own, as the agent registers now (seedReplayServers). */
export interface KeyedSeeding {
  /** The address the key proofs are made out to. */
  audience: string
  /** Cameras in each approved box's configuration. */
  cameras: number
  /** Filled with each box's key by serverId, pending boxes' too. */
  keys: Map<string, KeyedBox>
}

/** 1..n: the seeded cameras are cam-1, cam-2, … */
export const cameraNumbers = (n: number) => Array.from({ length: n }, (_, k) => k + 1)

/**
 * One waiting replay (REQUESTED) for each of `serverIds`' boxes, on a court of its area, asked by
 * `userId`: their status answers carry replayRequests. Straight inserts (the API would also call the
 * box). The server must run with a REPLAY_REQUEST_TIMEOUT_SECONDS longer than the run.
 */
export async function seedWaitingReplays(db: Db, serverIds: string[], userId: string): Promise<void> {
  const now = new Date().toISOString()
  for (const serverId of serverIds) {
    const box = await db
      .selectFrom('replay_servers')
      .select(['id', 'area_id'])
      .where('server_id_hash', '=', createHash('sha256').update(serverId).digest('hex'))
      .executeTakeFirstOrThrow()
    const courtId = randomUUID()
    await db.insertInto('courts').values({ id: courtId, area_id: box.area_id!, pod_id: null, name: 'Court', slug: `court-${courtId}`, created_at: now, updated_at: now }).execute()
    await db
      .insertInto('replays')
      .values({
        id: randomUUID(), user_id: userId, court_id: courtId, replay_server_id: box.id, camera_id: 'cam-1', start_at: now, end_at: now,
        status: 'REQUESTED', reason: null, location: null, duration_seconds: null, size_bytes: null, sha256: null,
        package_id: null, redemption_id: null, created_at: now, updated_at: now, kind: 'CLIP'
      })
      .execute()
  }
}

export const statusPath = (serverId: string) => `/apis/v2/replay-servers/device/${serverId}/status`

export interface KeyedBox {
  serverId: string
  publicKey: string
  privateKey: KeyObject
  /** The last timestamp signed (epoch ms): each poll's must be newer. */
  lastSigned: number
}

/**
 * `count` approved boxes with a two-camera configuration, each registered proving a box key of its
 * own, as the agent registers; their polls must be signed (signedStatusPath).
 */
export async function seedKeyedReplayServers(db: Db, count: number, venue: Venue, audience: string): Promise<KeyedBox[]> {
  const clock = { now: () => new Date() }
  const deps = { clock, tokenKey: await deviceTokenKey(db, { DEVICE_TOKEN_SECRET: '' }, clock), pollIntervalSeconds: 30 }
  const boxes: KeyedBox[] = []
  for (let i = 0; i < count; i++) {
    const deviceId = `bench-keyed-box-${i}`
    const { publicKey, privateKey, keyProof } = newBoxKey(deviceId, audience)
    const { serverId } = await registerReplayServer(db, { deviceId, publicKey, keyProof }, { sourceIp: '127.0.0.1', audience }, deps)
    const { id } = await db.selectFrom('replay_servers').select('id').where('device_id', '=', deviceId).executeTakeFirstOrThrow()
    await approveReplayServer(db, id, { areaId: pick(venue.areaIds, i) }, deps)
    await setReplayServerConfig(db, id, { cameras: [1, 2].map((n) => ({ id: `cam-${n}`, name: `Court ${n}`, feed: `rtsp://10.1.${i >> 8}.${i & 255}:554/stream${n}` })) }, deps)
    boxes.push({ serverId, publicKey, privateKey, lastSigned: 0 })
  }
  return boxes
}

/** A box key of its own and the proof that registers it, as the agent makes them. */
function newBoxKey(deviceId: string, audience: string) {
  const pair = generateKeyPairSync('ed25519')
  const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const timestamp = new Date().toISOString()
  const signature = sign(null, Buffer.from(boxKeyProofText({ deviceId, publicKey, timestamp, audience })), pair.privateKey).toString('base64')
  return { publicKey, privateKey: pair.privateKey, keyProof: { timestamp, signature } }
}

/** What a box with two cameras recording reports, as the agent sends it. */
export const HEALTH_REPORT: BoxHealthReport = {
  cameras: [1, 2].map((n) => ({ id: `cam-${n}`, state: 'RECORDING' as const, lastSegmentAt: new Date().toISOString(), restarts: 0, problem: null })),
  disk: { freeBytes: 412_000_000_000, totalBytes: 1_000_000_000_000, recordingsBytes: 540_000_000_000, hoursKept: 310.5 },
  temperatureCelsius: 48.5,
  memoryBytes: 84_000_000,
  uptimeSeconds: 86_400
}
const HEALTH_TEXT = JSON.stringify(HEALTH_REPORT)

/** A status poll signed afresh as the agent signs every poll, carrying a health report when asked. */
export function signedStatusPath(box: KeyedBox, withHealth: boolean): string {
  return `${statusPath(box.serverId)}?${signedPollQuery(box, withHealth ? HEALTH_TEXT : undefined)}&roundTripMs=12`
}

/**
 * The query parameters that sign a poll (publicKey, keyTimestamp, keySignature), each signature newer
 * than the box's last, and with `health` the report and its own signature (healthSignature).
 */
export function signedPollQuery(box: KeyedBox, health?: string): string {
  box.lastSigned = Math.max(Date.now(), box.lastSigned + 1)
  const timestamp = new Date(box.lastSigned).toISOString()
  const keySignature = sign(null, Buffer.from(boxKeyAdoptionText({ serverId: box.serverId, publicKey: box.publicKey, timestamp })), box.privateKey).toString('base64')
  const query = new URLSearchParams({ publicKey: box.publicKey, keyTimestamp: timestamp, keySignature })
  if (health !== undefined) {
    // The report is signed too, with the same timestamp, as the agent signs it (the server keeps no report it does not sign).
    query.set('health', health)
    query.set('healthSignature', sign(null, Buffer.from(boxHealthSignatureText({ serverId: box.serverId, timestamp, health })), box.privateKey).toString('base64'))
  }
  return query.toString()
}

/** Polls every box once, as a box would after approval, and keeps the ETag each received. */
export async function collectEtags(server: Started, serverIds: string[]): Promise<string[]> {
  const etags: string[] = []
  for (let i = 0; i < serverIds.length; i += 50) {
    const chunk = await Promise.all(
      serverIds.slice(i, i + 50).map(async (id) => {
        const res = await fetch(`${server.url}${statusPath(id)}`)
        if (res.status !== 200) throw new Error(`status poll of a seeded box answered ${res.status}`)
        await res.arrayBuffer()
        return res.headers.get('etag')!
      })
    )
    etags.push(...chunk)
  }
  return etags
}

const bearer = (seeded: Seeded) => (i: number) => ({ authorization: `Bearer ${pick(seeded.staffTokens, i)}` })

/** Up to 10,000 distinct paths, spread over the whole list (a rotation, not a hot subset). */
function spread<T>(list: T[], toPath: (item: T, i: number) => string, max = 10_000): string[] {
  const step = Math.max(1, Math.floor(list.length / max))
  const paths: string[] = []
  for (let i = 0; i < list.length && paths.length < max; i += step) paths.push(toPath(list[i]!, i))
  return paths
}

/** A page about 90% of the way through `matches` results, 20 to a page. */
const deepPage = (matches: number) => Math.max(2, Math.floor((matches / 20) * 0.9))

export const scenarios: Scenario[] = [
  {
    name: 'GET replay-servers/device/{serverId}/status',
    target: 0.5,
    pinoTarget: 0.7,
    run: (server, seeded, durationSeconds, connections) =>
      load({ name: 'status poll', url: server.url, paths: seeded.serverIds.map(statusPath), durationSeconds, connections })
  },
  {
    name: 'GET replay-servers/device/{serverId}/status (304)',
    target: 0.65,
    pinoTarget: 0.9,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'status poll 304',
        url: server.url,
        paths: seeded.serverIds.map(statusPath),
        headers: (i) => ({ 'if-none-match': pick(seeded.etags, i) }),
        expectStatus: 304,
        durationSeconds,
        connections
      })
  },
  {
    // The two rows of issue 48: a signed poll (every poll of a box with a key) without and with the
    // health report it carries on a change or every few minutes; the client signs each afresh.
    name: 'GET replay-servers/device/{serverId}/status (signed)',
    run: (server, seeded, durationSeconds, connections) =>
      load({ name: 'status poll, signed', url: server.url, paths: [], pathOf: (i) => signedStatusPath(pick(seeded.keyedBoxes ?? [], i), false), durationSeconds, connections })
  },
  {
    name: 'GET replay-servers/device/{serverId}/status (signed, with health)',
    run: (server, seeded, durationSeconds, connections) =>
      load({ name: 'status poll, signed, with health', url: server.url, paths: [], pathOf: (i) => signedStatusPath(pick(seeded.keyedBoxes ?? [], i), true), durationSeconds, connections })
  },
  {
    name: 'GET replay-servers/device/{serverId}/status (replay waiting)',
    target: 0.6,
    run: (server, seeded, durationSeconds, connections) =>
      load({ name: 'status poll, replay waiting', url: server.url, paths: (seeded.waitingServerIds ?? []).map(statusPath), durationSeconds, connections })
  },
  {
    name: 'GET templates/{id} (Bearer)',
    cached: true,
    target: 0.45,
    pinoTarget: 0.6,
    growth: true,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'template read',
        url: server.url,
        paths: spread(seeded.templateIds, (id) => `/apis/v2/templates/${id}`),
        headers: bearer(seeded),
        durationSeconds,
        connections
      })
  },
  {
    name: 'GET templates?ipp=20&areaId= page 1',
    cached: true,
    target: 0.35,
    pinoTarget: 0.5,
    uncached: { target: 0.1 },
    growth: true,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'list by area',
        url: server.url,
        paths: seeded.areaIds.map((a) => `/apis/v2/templates?ipp=20&areaId=${a}`),
        headers: bearer(seeded),
        durationSeconds,
        connections
      })
  },
  {
    name: 'GET templates?ipp=20&areaId= deep page',
    cached: true,
    target: 0.25,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'list by area, deep',
        url: server.url,
        paths: seeded.areaIds.map((a) => `/apis/v2/templates?ipp=20&areaId=${a}&page=${deepPage(seeded.perArea)}`),
        headers: bearer(seeded),
        durationSeconds,
        connections
      })
  },
  {
    name: 'GET templates?ipp=20&search= page 1',
    cached: true,
    target: 0.25,
    uncached: { p99Ms: 50 },
    growth: true,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'list by search',
        url: server.url,
        paths: [`/apis/v2/templates?ipp=20&search=${encodeURIComponent(seeded.searchTerm)}`],
        headers: bearer(seeded),
        durationSeconds,
        connections
      })
  },
  {
    name: 'GET templates?ipp=20&search= deep page',
    cached: true,
    target: 0.25,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'list by search, deep',
        url: server.url,
        paths: [`/apis/v2/templates?ipp=20&search=${encodeURIComponent(seeded.searchTerm)}&page=${deepPage(seeded.searchMatches)}`],
        headers: bearer(seeded),
        durationSeconds,
        connections
      })
  }
]
