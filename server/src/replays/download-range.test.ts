// A file:// clip's download in byte ranges (issue 49): a phone's <video> seeks in a long clip (a
// match's angle, to a chapter) by asking for the bytes from there; without ranges it plays from the start.
import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { DEVICE, REPLAYS, SHA, filmedVenue, storedClip } from './test-helpers.js'

t.test('a READY clip in a file:// bucket is served in the byte ranges a player asks for', async (t) => {
  const { ctx, venue, member, call, device, bucketDir } = await filmedVenue(t)
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  for (const status of ['EXPORTING', 'UPLOADING']) await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status })
  const location = storedClip(bucketDir, `cam-1/${replay.id}.mp4`)
  const bytes = 'not really an mp4, but bytes'
  t.equal((await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location, durationSeconds: 10, sizeBytes: bytes.length, sha256: SHA })).statusCode, 200)
  const link = new URL((await call('GET', `${REPLAYS}/${replay.id}`, member)).json().downloadUrl)
  const get = (range?: string) => ctx.app.inject({ url: `${link.pathname}${link.search}`, headers: range ? { range } : {} })

  const whole = await get()
  t.equal(whole.statusCode, 200)
  t.equal(whole.headers['accept-ranges'], 'bytes', 'the answer says ranges may be asked for')
  t.equal(whole.body, bytes)

  const middle = await get('bytes=4-9')
  t.equal(middle.statusCode, 206)
  t.equal(middle.headers['content-range'], `bytes 4-9/${bytes.length}`)
  t.equal(middle.headers['content-length'], '6')
  t.equal(middle.headers['content-type'], 'video/mp4')
  t.equal(middle.body, bytes.slice(4, 10))
  t.equal((await get('bytes=20-')).body, bytes.slice(20), 'from a byte to the end')
  t.equal((await get('bytes=-5')).body, bytes.slice(-5), 'the last bytes')
  t.equal((await get('bytes=20-1000')).body, bytes.slice(20), 'an end past the clip is its end')
  t.equal((await get('bytes=0-1,4-5')).statusCode, 200, 'several ranges: the whole clip')

  const outside = await get(`bytes=${bytes.length}-`)
  t.equal(outside.statusCode, 416)
  t.equal(outside.headers['content-range'], `bytes */${bytes.length}`)
  t.match(errorOf(outside), { statusCode: 416, error: 'Range Not Satisfiable', message: /outside the clip's 28 bytes/ })

  // What an attacker might send: each a 416 in the error shape, or the whole clip, never a 500.
  for (const range of ['bytes=9-4', 'bytes=-0', 'bytes=99999999999999999999-', `bytes=${bytes.length + 5}-${bytes.length + 9}`]) {
    const refused = await get(range)
    t.equal(refused.statusCode, 416, range)
    t.equal(errorOf(refused).statusCode, 416)
  }
  for (const range of ['bytes=-5-3', 'bytes=-', 'bytes=a-b', 'items=0-4', 'bytes=0-4, 2-3']) {
    const whole = await get(range)
    t.equal(whole.statusCode, 200, `${range}: the whole clip`)
    t.equal(whole.body, bytes)
  }
  const huge = await get('bytes=-99999999999999')
  t.equal(huge.statusCode, 206, 'a suffix longer than the clip: all of it')
  t.equal(huge.headers['content-range'], `bytes 0-${bytes.length - 1}/${bytes.length}`)

  ctx.clock.advance(901_000)
  t.equal((await get('bytes=4-9')).statusCode, 403, 'an expired link serves no range either')
})
