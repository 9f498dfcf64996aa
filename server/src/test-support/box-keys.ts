// The steps of the box-key and claim tests (replay-servers/claims.test.ts and registration-caps.test.ts): box keys,
// registrations proving them, and status polls signed as the agent signs every poll.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import type { Test } from 'tap'
import { boxKeyAdoptionText, boxKeyProofText } from '@club/contract'
import type { TestApp } from './app.js'
import { ADMIN, REGISTER, adminOf, approve, area, camera, poll as unsignedPoll, putConfig, registeredBox } from '../replay-servers/test-helpers.js'

export const ATTACKER_IP = '203.0.113.9'
export const BOX_URL = 'http://10.0.0.5:8080/'
/** The origin of PUBLIC_BASE_URL as testConfig leaves it: the audience a proof must be made for. */
export const AUDIENCE = 'http://localhost:3000'

export interface BoxKey {
  publicKey: string
  privateKey: KeyObject
}

export function boxKey(): BoxKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  return { publicKey: Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64'), privateKey }
}

/** A registration body proving `key`, made at `timestamp` (the server's clock by default). */
export function proven(ctx: TestApp, key: BoxKey, body: Record<string, unknown> = {}, timestamp = ctx.clock.now().toISOString(), audience = AUDIENCE) {
  const deviceId = (body.deviceId as string | undefined) ?? 'box-1'
  const serverUrl = body.serverUrl as string | undefined
  const text = boxKeyProofText({ deviceId, publicKey: key.publicKey, timestamp, serverUrl, audience })
  return { deviceId, ...body, publicKey: key.publicKey, keyProof: { timestamp, signature: sign(null, Buffer.from(text), key.privateKey).toString('base64') } }
}

export function registerFrom(ctx: TestApp, remoteAddress: string, body: Record<string, unknown>) {
  return ctx.app.inject({ method: 'POST', url: REGISTER, remoteAddress, payload: { deviceId: 'box-1', ...body } })
}

/** The status query that lets a keyless record adopt `key`: signed over the poll's own serverId. */
export function adoption(ctx: TestApp, key: BoxKey, serverId: string, signedFor = serverId) {
  const timestamp = ctx.clock.now().toISOString()
  const text = boxKeyAdoptionText({ serverId: signedFor, publicKey: key.publicKey, timestamp })
  const keySignature = sign(null, Buffer.from(text), key.privateKey).toString('base64')
  return new URLSearchParams({ publicKey: key.publicKey, keyTimestamp: timestamp, keySignature }).toString()
}

/** The box key each test's polls are signed with, as the agent signs every poll (none: unsigned). */
export const signers = new WeakMap<TestApp, BoxKey>()
let signedPolls = 0

/**
 * A status poll as the box makes it: signed with its key (when the test has one and names no query
 * of its own), each signature a millisecond newer than the last, as fresh ones are.
 */
export function poll(ctx: TestApp, serverId: string, query = '', headers: Record<string, string> = {}) {
  const key = signers.get(ctx)
  if (key === undefined || query !== '') return unsignedPoll(ctx, serverId, query, headers)
  return unsignedPoll(ctx, serverId, signedQuery(ctx, key, serverId), headers)
}

export function signedQuery(ctx: TestApp, key: BoxKey, serverId: string, signedFor = serverId): string {
  const timestamp = new Date(ctx.clock.now().getTime() + (signedPolls++ % 60_000)).toISOString()
  const text = boxKeyAdoptionText({ serverId: signedFor, publicKey: key.publicKey, timestamp })
  const keySignature = sign(null, Buffer.from(text), key.privateKey).toString('base64')
  return new URLSearchParams({ publicKey: key.publicKey, keyTimestamp: timestamp, keySignature }).toString()
}

/** Three poll intervals pass: the address the box polls from is held long enough to adopt a key from it. */
export function holdAddress(ctx: TestApp): void {
  ctx.clock.advance(3 * ctx.config.REPLAY_POLL_INTERVAL_SECONDS * 1000)
}

/** An approved box with a camera, a serverUrl and (optionally) a key, as it polls before any claim. */
export async function approvedBox(t: Test, ctx: TestApp, key?: BoxKey) {
  if (key) signers.set(ctx, key)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const box = await registeredBox(ctx, key ? proven(ctx, key, { serverUrl: BOX_URL, hostname: 'replay-01' }) : { serverUrl: BOX_URL, hostname: 'replay-01' })
  t.equal((await approve(ctx, admin, box.id, { areaId, displayName: 'Court 1 box' })).statusCode, 200)
  t.equal((await putConfig(ctx, admin, box.id, { cameras: [camera()] })).statusCode, 200)
  const answer = (await poll(ctx, box.serverId)).json()
  t.match(answer, { status: 'APPROVED', area: { id: areaId }, config: { cameras: [camera()] } })
  return { ...box, admin, areaId, answer }
}

export const adminView = async (ctx: TestApp, admin: string, id: string) =>
  (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).json()

export const decide = (ctx: TestApp, admin: string, id: string, claimId: string, decision: 'approve' | 'reject') =>
  ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/claims/${claimId}/${decision}`, headers: { authorization: admin } })

