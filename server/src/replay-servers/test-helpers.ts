// Shared steps of the replay-server tests: register a box, poll it, make an admin and an area.
import { randomUUID } from 'node:crypto'
import { openDatabase } from '../db/database.js'
import { runCli } from '../cli.js'
import type { TestApp } from '../test-support/app.js'
import { userWithToken } from '../test-support/app.js'
import { deviceTokenKey, type ReplayServerDeps } from './service.js'

export const REGISTER = '/apis/v2/replay-servers/device'
export const ADMIN = '/apis/v2/admin/replay-servers'
export const statusUrl = (serverId: string, query = '') => `${REGISTER}/${serverId}/status${query ? `?${query}` : ''}`

export async function register(ctx: TestApp, body: Record<string, unknown> = {}) {
  return ctx.app.inject({ method: 'POST', url: REGISTER, payload: { deviceId: 'box-1', ...body } })
}

/** Registers a box and answers its serverId and record id. */
export async function registeredBox(ctx: TestApp, body: Record<string, unknown> = {}) {
  const res = await register(ctx, body)
  if (res.statusCode !== 200) throw new Error(`registration failed: ${res.body}`)
  const serverId: string = res.json().serverId
  const row = await ctx.app.db
    .selectFrom('replay_servers')
    .select('id')
    .where('device_id', '=', (body.deviceId as string | undefined) ?? 'box-1')
    .executeTakeFirstOrThrow()
  return { serverId, id: row.id }
}

export async function poll(ctx: TestApp, serverId: string, query = '', headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'GET', url: statusUrl(serverId, query), headers })
}

export async function adminOf(ctx: TestApp) {
  return (await userWithToken(ctx, 'admin')).authorization
}

/** An area (in a fresh region), inserted directly: the venue endpoints belong to another module. */
export async function area(ctx: TestApp, name = 'Centre Court'): Promise<string> {
  const now = ctx.clock.now().toISOString()
  const regionId = randomUUID()
  const id = randomUUID()
  await ctx.app.db.insertInto('regions').values({ id: regionId, name: 'North', slug: `north-${regionId}`, created_at: now, updated_at: now }).execute()
  await ctx.app.db
    .insertInto('areas')
    .values({ id, region_id: regionId, name, slug: `area-${id}`, created_at: now, updated_at: now })
    .execute()
  return id
}

export async function approve(ctx: TestApp, authorization: string, id: string, body: Record<string, unknown>) {
  return ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/approve`, headers: { authorization }, payload: body })
}

export async function putConfig(ctx: TestApp, authorization: string, id: string, config: unknown) {
  return ctx.app.inject({ method: 'PUT', url: `${ADMIN}/${id}/config`, headers: { authorization }, payload: config as object })
}

export const camera = (id = 'cam-1', extra: Record<string, unknown> = {}) => ({
  id,
  name: 'Court 1 north',
  feed: 'rtsp://10.0.0.20:554/stream1',
  isEnabled: true,
  ...extra
})

/**
 * A second connection to the test app's database file with the deps the `club devices` commands
 * use: changes made through it come from "another process", which the app's kept answers must see.
 */
export async function anotherProcess(t: { teardown(fn: () => unknown): void }, ctx: TestApp) {
  const db = openDatabase(ctx.config.DATABASE_URL)
  t.teardown(() => db.destroy())
  const deps: ReplayServerDeps = {
    clock: ctx.clock,
    tokenKey: await deviceTokenKey(db, ctx.config, ctx.clock),
    pollIntervalSeconds: ctx.config.REPLAY_POLL_INTERVAL_SECONDS
  }
  /** What the database holds of a record, read as that other process would. */
  const stored = (id: string) => db.selectFrom('replay_servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return { db, deps, stored }
}

/** Runs `club ...` against the test app's database file; answers the exit code and the parsed output. */
export async function club(ctx: TestApp, ...argv: string[]) {
  let out = ''
  let err = ''
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, LOG_LEVEL: 'silent' }
  const code = await runCli(argv, env, (s) => (out += s), (s) => (err += s))
  return { code, json: out ? JSON.parse(out) : undefined, err }
}
