// Shared steps of the replay tests: a venue whose court is filmed by an approved box, and a clip as
// the box would have stored it.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { testApp, userWithToken, type Teardown } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { caller } from '../packages/test-fixtures.js'
import { adminOf, approve, camera, putConfig, registeredBox } from '../replay-servers/test-helpers.js'
import { poll, proven, signers, type BoxKey } from '../test-support/box-keys.js'

export const REPLAYS = '/apis/v2/replays'
export const DEVICE = '/apis/v2/replay-servers/device/replays'
export const SHA = 'a'.repeat(64)

/** A venue with one approved box whose camera cam-1 films court1, its bucket a folder. */
export async function filmedVenue(t: Teardown, env: Record<string, string> = {}, box: { serverUrl?: string; key?: BoxKey } = {}) {
  const ctx = await testApp(t, env)
  const venue = await testVenue(ctx)
  const admin = await adminOf(ctx)
  const registration = box.serverUrl ? { serverUrl: box.serverUrl } : {}
  // A box with a key signs every poll (its health is kept only from signed polls).
  if (box.key) signers.set(ctx, box.key)
  const { serverId, id } = await registeredBox(ctx, box.key ? proven(ctx, box.key, registration) : registration)
  const approved = await approve(ctx, admin, id, { areaId: venue.hall.id })
  if (approved.statusCode !== 200) throw new Error(`approval failed: ${approved.body}`)
  const bucketDir = join(ctx.dir, 'bucket')
  const bucket = pathToFileURL(bucketDir).href
  const res = await putConfig(ctx, admin, id, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id] }), camera('cam-2')] })
  if (res.statusCode !== 200) throw new Error(`configuration failed: ${res.body}`)
  const status = (await poll(ctx, serverId)).json()
  const device = { authorization: `Bearer ${status.accessToken}` }
  const member = await userWithToken(ctx, 'member')
  return { ctx, venue, admin, serverId, boxId: id, device, member, bucketDir, bucket, call: caller(ctx) }
}

/** A clip as the box would have stored it in the bucket folder. */
export function storedClip(bucketDir: string, name: string): string {
  const path = join(bucketDir, name)
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, Buffer.from('not really an mp4, but bytes'))
  return pathToFileURL(path).href
}

