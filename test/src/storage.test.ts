// Each bucket driver against a local server speaking its protocol: s3:// against s3rver (the S3 REST
// API, in process on loopback), gs:// against FakeGcs (the JSON API's resumable uploads), file://
// against a folder. Upload, a signed link that downloads the same bytes, delete.
import t from 'tap'
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BucketObjectMissingError, FileBucket, checkLocation, locationInBucket, openBucket, type Bucket, type ResumableUpload } from '@club/storage'
import { FakeGcs } from './fake-gcs.js'
import { gcsCredentials, startS3, s3Credentials } from './stores.js'
import { tempDir } from './support.js'

/** A clip-sized file of known bytes (6 MiB: more than one multipart part). */
function clipFile(dir: string): { path: string; bytes: Buffer } {
  const bytes = Buffer.alloc(6 * 1024 * 1024)
  for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32BE(i, i)
  const path = join(dir, 'clip.mp4')
  writeFileSync(path, bytes)
  return { path, bytes }
}

t.test('s3:// uploads in parts, signs a GET that expires, deletes', async (t) => {
  const dir = tempDir(t)
  const s3 = await startS3(t, dir, 'clips')
  const credentialsPath = s3Credentials(dir, s3.endpoint)
  const bucket = await openBucket('s3://clips/venue-1', { credentialsPath })
  const clip = clipFile(dir)
  const location = await bucket.upload(clip.path, 'cam-a/r1.mp4')
  t.equal(location, 's3://clips/venue-1/cam-a/r1.mp4')
  const now = new Date()
  const url = await bucket.signedUrl(location, { expiresInSeconds: 900, now })
  const parsed = new URL(url)
  t.equal(parsed.searchParams.get('X-Amz-Expires'), '900', 'valid REPLAY_URL_TTL_SECONDS')
  t.equal(parsed.pathname, '/clips/venue-1/cam-a/r1.mp4', 'path-style')
  const res = await fetch(url)
  t.equal(res.status, 200)
  t.ok(Buffer.from(await res.arrayBuffer()).equals(clip.bytes), 'the same bytes come back')
  const expired = await bucket.signedUrl(location, { expiresInSeconds: 1, now: new Date(Date.now() - 60_000) })
  t.equal((await fetch(expired)).status, 403, 'an expired link is refused')
  await bucket.remove(location)
  t.equal((await fetch(await bucket.signedUrl(location, { expiresInSeconds: 900, now: new Date() }))).status, 404, 'gone once removed')
  await bucket.remove(location)
  t.pass('removing again is fine')
})

t.test('gs:// uploads through a resumable session, signs a V4 link, deletes', async (t) => {
  const dir = tempDir(t)
  const gcs = new FakeGcs()
  await gcs.start()
  t.teardown(() => gcs.stop())
  const credentialsPath = gcsCredentials(dir, gcs.url)
  gcs.trust((JSON.parse(readFileSync(credentialsPath, 'utf8')) as { private_key: string }).private_key)
  const bucket = await openBucket('gs://clips/venue-1', { credentialsPath })
  const clip = clipFile(dir)
  const location = await bucket.upload(clip.path, 'cam-a/r1.mp4')
  t.equal(location, 'gs://clips/venue-1/cam-a/r1.mp4')
  t.ok(gcs.objects.get('clips/venue-1/cam-a/r1.mp4')?.equals(clip.bytes), 'stored whole')
  const url = await bucket.signedUrl(location, { expiresInSeconds: 900, now: new Date() })
  const parsed = new URL(url)
  t.equal(parsed.searchParams.get('X-Goog-Algorithm'), 'GOOG4-RSA-SHA256', 'V4 signature')
  t.equal(parsed.searchParams.get('X-Goog-Expires'), '900')
  const res = await fetch(url)
  t.equal(res.status, 200)
  t.ok(Buffer.from(await res.arrayBuffer()).equals(clip.bytes))
  // Signed by a key the store does not know (another service account): refused.
  const stranger = await openBucket('gs://clips/venue-1', { credentialsPath: gcsCredentials(join(dir, 'stranger'), gcs.url) })
  t.equal((await fetch(await stranger.signedUrl(location, { expiresInSeconds: 900, now: new Date() }))).status, 403, 'a link signed with another key is refused')
  const altered = new URL(url)
  altered.searchParams.set('X-Goog-Expires', '3600')
  t.equal((await fetch(altered)).status, 403, 'a longer expiry breaks the signature')
  await bucket.remove(location)
  t.notOk(gcs.objects.has('clips/venue-1/cam-a/r1.mp4'), 'deleted')
  await bucket.remove(location)
  t.pass('removing again is fine')
})

t.test('file:// copies into the folder and removes only inside it', async (t) => {
  const dir = tempDir(t)
  const bucket = await openBucket(`file://${dir}/bucket`)
  const clip = clipFile(dir)
  const location = await bucket.upload(clip.path, 'cam-a/r1.mp4')
  t.ok(readFileSync(fileURLToPath(location)).equals(clip.bytes))
  await t.rejects(bucket.remove(`file://${dir}/clip.mp4`), /not in this bucket/)
  await bucket.remove(location)
  t.notOk(existsSync(fileURLToPath(location)))
})

t.test('a bucket of another scheme, or unreadable credentials, is refused by name, never echoing a key', async (t) => {
  const dir = tempDir(t)
  await t.rejects(openBucket('ftp://x/y'), /no storage driver for ftp:\/\/ buckets/)
  const path = join(dir, 'bad.json')
  writeFileSync(path, 'secret-key-material not json')
  await t.rejects(openBucket('s3://clips', { credentialsPath: path }), { message: `the credentials file ${path} is not a JSON object` })
})

t.test('a location is in a bucket only below its bucket and prefix, once decoded', async (t) => {
  const cases: Array<[bucket: string, location: string, inside: boolean]> = [
    ['file:///srv/clips', 'file:///srv/clips/cam-1/a.mp4', true],
    ['file:///srv/clips', 'file:///srv/clips/%2e%2e/secrets', false],
    ['file:///srv/clips', 'file:///srv/clips/../secrets', false],
    ['file:///srv/clips', 'file:///srv/clipsother/a.mp4', false],
    ['file:///srv/clips', 'file:///srv/clips/a%2Fb.mp4', false],
    ['s3://clips/venue-a', 's3://clips/venue-a/cam-1/a.mp4', true],
    ['s3://clips/venue-a', 's3://clips/venue-b/a.mp4', false],
    ['s3://clips/venue-a', 's3://clips/venue-a/%2e%2e/venue-b/a.mp4', false],
    ['s3://clips/venue-a', 's3://clips/venue-a/%E0%A4%A', false],
    ['s3://clips', 's3://other/a.mp4', false],
    ['gs://clips', 'gs://clips/a.mp4', true],
    ['gs://clips', 's3://clips/a.mp4', false],
    ['ftp://clips', 'ftp://clips/a.mp4', false]
  ]
  for (const [bucket, location, inside] of cases) t.equal(locationInBucket(bucket, location), inside, `${location} in ${bucket}`)
  t.throws(() => new FileBucket('file:///srv/clips', '/srv/clips').pathOf('file:///srv/clips/%2e%2e/etc/passwd'), /not in this bucket/)
})

t.test('file:// follows no symbolic link out of the folder: on upload, on read, on delete, and checkLocation says so', async (t) => {
  const dir = tempDir(t)
  const root = join(dir, 'bucket')
  const url = pathToFileURL(root).href
  const bucket = new FileBucket(url, root)
  const clip = clipFile(dir)
  const outside = join(dir, 'outside')
  mkdirSync(outside)
  const secret = join(outside, 'passwd')
  writeFileSync(secret, 'root:x:0:0\n')
  const inBucket = (path: string) => pathToFileURL(join(root, path)).href

  const stored = await bucket.upload(clip.path, 'cam-a/r1.mp4')
  const opened = await bucket.openForRead(stored)
  t.equal(opened.size, clip.bytes.length, 'a real clip reads')
  await opened.handle.close()
  await checkLocation(url, stored)

  symlinkSync(secret, join(root, 'cam-a', 'link.mp4'))
  await t.rejects(bucket.openForRead(inBucket('cam-a/link.mp4')), /leads out of this bucket/, 'a link to a file outside is refused on read')
  await t.rejects(checkLocation(url, inBucket('cam-a/link.mp4')), /leads out of this bucket/)
  symlinkSync(outside, join(root, 'elsewhere'))
  await t.rejects(bucket.openForRead(inBucket('elsewhere/passwd')), /leads out of this bucket/, 'so is a linked folder')
  await t.rejects(bucket.upload(clip.path, 'elsewhere/new.mp4'), /leads out of this bucket/, 'an upload into a linked folder is refused')
  t.notOk(existsSync(join(outside, 'new.mp4')))
  await t.rejects(bucket.remove(inBucket('elsewhere/passwd')), /leads out of this bucket/, 'a delete through a linked folder is refused')
  t.ok(existsSync(secret))

  // A link waiting where a clip will be uploaded: replaced, never written through.
  symlinkSync(secret, join(root, 'cam-a', 'r2.mp4'))
  await bucket.upload(clip.path, 'cam-a/r2.mp4')
  t.equal(readFileSync(secret, 'utf8'), 'root:x:0:0\n', 'the file outside is untouched')
  t.ok(readFileSync(join(root, 'cam-a', 'r2.mp4')).equals(clip.bytes))
  await t.rejects(bucket.upload(clip.path, '../escape.mp4'), /not in this bucket/)

  await bucket.remove(inBucket('cam-a/link.mp4'))
  t.ok(existsSync(secret), 'removing a link removes the link, not its target')
  await t.rejects(bucket.openForRead(inBucket('cam-a/none.mp4')), BucketObjectMissingError)
  // The same rule for every caller: the agent's clip export stores through this driver too.
  const linkedRoot = join(dir, 'linked-bucket')
  symlinkSync(root, linkedRoot)
  const viaLink = new FileBucket(pathToFileURL(linkedRoot).href, linkedRoot)
  t.ok((await viaLink.realPathOf(pathToFileURL(join(linkedRoot, 'cam-a', 'r1.mp4')).href)).startsWith(root), 'a bucket folder reached through a link is its real folder')
})

/** A match-sized file of known bytes: 20 MiB, three 8 MiB parts or chunks (the last 4 MiB). */
function matchFile(dir: string): { path: string; bytes: Buffer } {
  const bytes = Buffer.alloc(20 * 1024 * 1024)
  for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32BE(i / 4096, i)
  const path = join(dir, 'match.mp4')
  writeFileSync(path, bytes)
  return { path, bytes }
}

/**
 * Uploads `path` resumably through `bucket`, the connection "dropping" (the pace throwing) once
 * `dropAfter` bytes went out; then again from what was written down. Answers the bytes each attempt sent.
 */
async function interruptedThenResumed(bucket: Bucket, path: string, dropAfter: number) {
  let state: ResumableUpload | undefined
  let first = 0
  const interrupted = bucket.upload(path, 'cam-a/match.mp4', {
    onProgress: (s) => void (state = structuredClone(s)),
    pace: async (bytes) => {
      if (first >= dropAfter) throw new Error('the connection dropped')
      first += bytes
    }
  })
  let second = 0
  const firstError = await interrupted.then(() => undefined, (err: Error) => err)
  const location = await bucket.upload(path, 'cam-a/match.mp4', {
    ...(state ? { resume: state } : {}),
    pace: async (bytes) => void (second += bytes)
  })
  return { firstError, first, second, location, state }
}

t.test('s3:// a resumable upload cut off after a part goes on from the parts the store holds: whole, and fewer bytes sent', async (t) => {
  const dir = tempDir(t)
  const s3 = await startS3(t, dir, 'clips')
  const bucket = await openBucket('s3://clips/venue-1', { credentialsPath: s3Credentials(dir, s3.endpoint) })
  const match = matchFile(dir)
  const { firstError, first, second, location, state } = await interruptedThenResumed(bucket, match.path, 10 * 1024 * 1024)
  t.match(firstError, { message: 'the connection dropped' }, 'the first attempt was cut off mid-way')
  t.match(state, { scheme: 's3', parts: [{ number: 1 }] }, 'the first part was written down as stored')
  t.equal(location, 's3://clips/venue-1/cam-a/match.mp4')
  const res = await fetch(await bucket.signedUrl(location, { expiresInSeconds: 900, now: new Date() }))
  t.ok(Buffer.from(await res.arrayBuffer()).equals(match.bytes), 'the object is whole: the same bytes')
  t.equal(second, match.bytes.length - 8 * 1024 * 1024, `the second attempt sent only the parts the store lacked (${second} of ${match.bytes.length} bytes; ${first} sent before the drop)`)
})

t.test('s3:// an upload id the store no longer knows starts over, and is still whole', async (t) => {
  const dir = tempDir(t)
  const s3 = await startS3(t, dir, 'clips')
  const bucket = await openBucket('s3://clips', { credentialsPath: s3Credentials(dir, s3.endpoint) })
  const match = matchFile(dir)
  let sent = 0
  const location = await bucket.upload(match.path, 'cam-a/match.mp4', {
    resume: { scheme: 's3', key: 'cam-a/match.mp4', size: match.bytes.length, partSize: 8 * 1024 * 1024, uploadId: 'made-up', parts: [{ number: 1, etag: '"x"' }] },
    pace: async (bytes) => void (sent += bytes)
  }).catch((err: Error) => err)
  // s3rver has no ListParts: a stale id is found out at the completion; the caller's next attempt starts over.
  if (location instanceof Error) {
    const again = await bucket.upload(match.path, 'cam-a/match.mp4', { pace: async (bytes) => void (sent += bytes) })
    t.equal(again, 's3://clips/cam-a/match.mp4')
  }
  const res = await fetch(await bucket.signedUrl('s3://clips/cam-a/match.mp4', { expiresInSeconds: 900, now: new Date() }))
  t.ok(Buffer.from(await res.arrayBuffer()).equals(match.bytes), 'the same bytes')
})

t.test('gs:// a resumable session cut off mid-way goes on from the bytes the store holds: whole, and fewer bytes sent', async (t) => {
  const dir = tempDir(t)
  const gcs = new FakeGcs()
  await gcs.start()
  t.teardown(() => gcs.stop())
  const bucket = await openBucket('gs://clips/venue-1', { credentialsPath: gcsCredentials(dir, gcs.url) })
  const match = matchFile(dir)
  const { firstError, second, location, state } = await interruptedThenResumed(bucket, match.path, 10 * 1024 * 1024)
  t.match(firstError, { message: /the connection dropped|socket hang up|aborted/ }, 'the first attempt was cut off mid-way')
  t.match(state, { scheme: 'gs', sessionUri: /upload_id=/ }, 'the session was written down')
  t.equal(location, 'gs://clips/venue-1/cam-a/match.mp4')
  t.ok(gcs.objects.get('clips/venue-1/cam-a/match.mp4')?.equals(match.bytes), 'the object is whole: the same bytes')
  t.equal(second, match.bytes.length - 8 * 1024 * 1024, `the second attempt sent only what the store lacked (${second} of ${match.bytes.length} bytes)`)
})

t.test("gs:// a note naming a session on another host is not followed: the clip's bytes go to no one but the store", async (t) => {
  const dir = tempDir(t)
  const gcs = new FakeGcs()
  await gcs.start()
  t.teardown(() => gcs.stop())
  // Elsewhere: counts what reaches it and says it holds the whole object (so a box following it
  // would never upload to the store at all; a 308 would have it send every byte there).
  let reached = 0
  const elsewhere = createServer((req, res) => {
    reached++
    req.resume()
    req.on('end', () => res.writeHead(200).end())
  })
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => elsewhere.close(() => resolve())))
  const port = (elsewhere.address() as AddressInfo).port
  const bucket = await openBucket('gs://clips/venue-1', { credentialsPath: gcsCredentials(dir, gcs.url) })
  const clip = clipFile(dir)
  const resume: ResumableUpload = { scheme: 'gs', key: 'venue-1/cam-a/match.mp4', size: clip.bytes.length, sessionUri: `http://127.0.0.1:${port}/upload?upload_id=x` }
  const location = await bucket.upload(clip.path, 'cam-a/match.mp4', { resume })
  t.equal(reached, 0, 'nothing sent to the other host')
  t.equal(location, 'gs://clips/venue-1/cam-a/match.mp4')
  t.ok(gcs.objects.get('clips/venue-1/cam-a/match.mp4')?.equals(clip.bytes), 'uploaded whole to the store, from zero')
})

t.test('file:// a paced upload copies the whole file through the pace', async (t) => {
  const dir = tempDir(t)
  const bucket = await openBucket(`file://${dir}/bucket`)
  const match = matchFile(dir)
  let sent = 0
  const location = await bucket.upload(match.path, 'cam-a/match.mp4', { pace: async (bytes) => void (sent += bytes) })
  t.ok(readFileSync(fileURLToPath(location)).equals(match.bytes))
  t.equal(sent, match.bytes.length)
})

/**
 * Uploads `path` resumably while the store goes away mid-way (`stop` once 10 MiB went out, not awaited
 * there: the request sending may finish or be cut) and comes back (`start`); then again from what was
 * written down. Answers the first attempt's error and the bytes the second sent.
 */
async function storeOutageMidUpload(bucket: Bucket, path: string, stop: () => Promise<void>, start: () => Promise<void>) {
  let state: ResumableUpload | undefined
  let sent = 0
  let stopping: Promise<void> | undefined
  const firstError = await bucket.upload(path, 'cam-a/match.mp4', {
    onProgress: (s) => void (state = structuredClone(s)),
    pace: async (bytes) => {
      sent += bytes
      if (sent > 10 * 1024 * 1024 && !stopping) stopping = stop()
    }
  }).then(() => undefined, (err: Error) => err)
  await stopping
  await start()
  let second = 0
  await bucket.upload(path, 'cam-a/match.mp4', { ...(state ? { resume: state } : {}), pace: async (bytes) => void (second += bytes) })
  return { firstError, second }
}

t.test('s3:// the store going away mid-upload (connections refused) and coming back: the upload goes on from its parts', async (t) => {
  const dir = tempDir(t)
  const s3 = await startS3(t, dir, 'clips')
  const bucket = await openBucket('s3://clips', { credentialsPath: s3Credentials(dir, s3.endpoint), maxAttempts: 1 })
  const match = matchFile(dir)
  const { firstError, second } = await storeOutageMidUpload(bucket, match.path, () => s3.stop(), () => s3.start())
  t.ok(firstError instanceof Error, `the first attempt failed: ${firstError?.message}`)
  const res = await fetch(await bucket.signedUrl('s3://clips/cam-a/match.mp4', { expiresInSeconds: 900, now: new Date() }))
  t.ok(Buffer.from(await res.arrayBuffer()).equals(match.bytes), 'the object is whole: the same bytes')
  t.ok(second < match.bytes.length, `fewer bytes the second time: ${second} of ${match.bytes.length}`)
})

t.test('gs:// the store dropping every connection mid-chunk and coming back: the session goes on from the bytes it holds', async (t) => {
  const dir = tempDir(t)
  const gcs = new FakeGcs()
  await gcs.start()
  t.teardown(() => gcs.stop())
  const bucket = await openBucket('gs://clips', { credentialsPath: gcsCredentials(dir, gcs.url) })
  const match = matchFile(dir)
  const { firstError, second } = await storeOutageMidUpload(bucket, match.path, () => gcs.stop(), () => gcs.start(gcs.port))
  t.ok(firstError instanceof Error, `the first attempt failed: ${firstError?.message}`)
  t.ok(gcs.objects.get('clips/cam-a/match.mp4')?.equals(match.bytes), 'the object is whole: the same bytes')
  t.equal(second, match.bytes.length - 8 * 1024 * 1024, `only what the store lacked the second time: ${second} of ${match.bytes.length}`)
})
