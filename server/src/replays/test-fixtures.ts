// The replay tests' common start: a venue with an approved box filming court1 into a folder bucket,
// a member, and clips written where the box would have stored them.
import type { Test } from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { caller } from '../packages/test-fixtures.js'
import { adminOf, approve, camera, poll, putConfig, registeredBox } from '../replay-servers/test-helpers.js'

type Tap = Test

/** A venue with one approved box whose camera cam-1 films court1, its bucket a folder. */
export async function setup(t: Tap, env: Record<string, string> = {}, box: { serverUrl?: string } = {}) {
  const ctx = await testApp(t, env)
  const venue = await testVenue(ctx)
  const admin = await adminOf(ctx)
  const { serverId, id } = await registeredBox(ctx, box.serverUrl ? { serverUrl: box.serverUrl } : {})
  t.equal((await approve(ctx, admin, id, { areaId: venue.hall.id })).statusCode, 200)
  const bucketDir = join(ctx.dir, 'bucket')
  const bucket = pathToFileURL(bucketDir).href
  const res = await putConfig(ctx, admin, id, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id] }), camera('cam-2')] })
  t.equal(res.statusCode, 200, res.body)
  const status = (await poll(ctx, serverId)).json()
  const device = { authorization: `Bearer ${status.accessToken}` }
  const member = await userWithToken(ctx, 'member')
  return { ctx, venue, admin, serverId, boxId: id, device, member, bucketDir, bucket, call: caller(ctx) }
}

/** A clip as the box would have stored it in the bucket folder. */
export function storedClip(bucketDir: string, name = 'cam-1/clip.mp4'): string {
  const path = join(bucketDir, name)
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, Buffer.from('not really an mp4, but bytes'))
  return pathToFileURL(path).href
}

