// One bucket API over the three kinds of bucket a club may keep replay clips in, chosen by the URL's
// scheme: file:// (a folder or mounted share), s3:// (AWS S3 and S3-compatible stores, through the
// AWS SDK v3) and gs:// (Google Cloud Storage, through its official client). The agent uploads
// through it; the server signs download links and deletes through the same drivers (flydrive's idea,
// without its framework). Nothing here logs: keys and signatures stay out of every message.
import { readFile } from 'node:fs/promises'
import { relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BucketError } from './errors.js'
import { FileBucket, filePathOf, isBelow } from './file.js'

export { BucketError, BucketObjectMissingError } from './errors.js'
export { FileBucket } from './file.js'

export interface SignedUrlOptions {
  expiresInSeconds: number
  /** When the link starts to be valid (an injected clock's now). */
  now: Date
}

export interface Bucket {
  /** The bucket's URL as configured (scheme://bucket/prefix). */
  readonly url: string
  /** Stores a local file under `key` (below the bucket's prefix); answers its location (a URL of the same scheme). */
  upload(localPath: string, key: string): Promise<string>
  /** Removes the object at `location`; one already gone is not an error. */
  remove(location: string): Promise<void>
  /** A link anyone can GET the object at `location` with, until it expires (s3 and gs; file:// links are the server's). */
  signedUrl(location: string, options: SignedUrlOptions): Promise<string>
}

/** A bucket URL taken apart: `s3://clips/venue-1` → scheme s3, bucket clips, prefix venue-1. */
export interface BucketAddress {
  scheme: 'file' | 's3' | 'gs'
  bucket: string
  /** Without leading or trailing slash; '' for none. */
  prefix: string
}

export function parseBucketUrl(url: string): BucketAddress {
  const match = /^(file|s3|gs):\/\/([^/]*)(\/.*)?$/.exec(url)
  if (!match) throw new BucketError(`no storage driver for ${quoteScheme(url)} buckets: use file://, s3:// or gs://`)
  const scheme = match[1] as BucketAddress['scheme']
  if (scheme === 'file') return { scheme, bucket: '', prefix: fileURLToPath(url) }
  if (!match[2]) throw new BucketError(`${scheme}:// bucket URL without a bucket name`)
  return { scheme, bucket: match[2], prefix: (match[3] ?? '').replace(/^\/+|\/+$/g, '') }
}

/** The key of `location` in `address`'s bucket, or an error when it lies elsewhere or does not decode. */
export function keyOf(address: BucketAddress, location: string): string {
  const own = `${address.scheme}://${address.bucket}/`
  if (!location.startsWith(own)) throw new BucketError(`the location is not in bucket ${address.scheme}://${address.bucket}`)
  try {
    return decodeURIComponent(location.slice(own.length))
  } catch {
    throw new BucketError('the location is not a valid URL (a malformed percent-escape)')
  }
}

/**
 * Whether `location` lies below the bucket URL `bucketUrl` (its bucket and prefix), after decoding,
 * by its text alone. For file:// that is not enough (a symbolic link inside the folder may point
 * anywhere): what the server signs, serves or deletes is checked with checkLocation, which resolves it.
 */
export function locationInBucket(bucketUrl: string, location: string): boolean {
  try {
    const address = parseBucketUrl(bucketUrl)
    if (address.scheme === 'file') return isBelow(resolve(address.prefix), filePathOf(location))
    const key = keyOf(address, location)
    return !key.split('/').includes('..') && (address.prefix === '' || key.startsWith(`${address.prefix}/`))
  } catch {
    return false
  }
}

/**
 * Refuses (BucketError, naming why) a location that is not in the bucket `bucketUrl`: by its text for
 * s3:// and gs://; for file://, by where it really is once every symbolic link on its way is followed
 * (fs.realpath), which must be below the bucket folder's own real path. A file:// location that names
 * no file is BucketObjectMissingError.
 */
export async function checkLocation(bucketUrl: string, location: string): Promise<void> {
  const address = parseBucketUrl(bucketUrl)
  if (address.scheme !== 'file') {
    if (!locationInBucket(bucketUrl, location)) throw new BucketError(`the location is not in bucket ${bucketUrl}`)
    return
  }
  await new FileBucket(bucketUrl, address.prefix).realPathOf(location)
}

/**
 * The key of `location` below the bucket URL `bucketUrl`'s prefix (what `upload` was given), by its
 * text once decoded and resolved; a BucketError when it lies outside.
 */
export function keyBelow(bucketUrl: string, location: string): string {
  const address = parseBucketUrl(bucketUrl)
  if (!locationInBucket(bucketUrl, location)) throw new BucketError(`the location is not in bucket ${bucketUrl}`)
  if (address.scheme === 'file') return relative(resolve(address.prefix), filePathOf(location)).split(sep).join('/')
  const key = keyOf(address, location)
  return address.prefix === '' ? key : key.slice(address.prefix.length + 1)
}

export function joinKey(prefix: string, key: string): string {
  return prefix ? `${prefix}/${key}` : key
}

function quoteScheme(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]
  return scheme ? `${scheme}://` : 'such'
}

/**
 * The credentials file of an s3:// bucket (`cloudCredentialsPath` on the box,
 * REPLAY_STORAGE_CREDENTIALS on the server). Without one the SDK's own chain applies (environment,
 * instance role).
 */
export interface S3Credentials {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
  region?: string
  /** An S3-compatible store's address (MinIO, Ceph, R2...); path-style addressing is then used. */
  endpoint?: string
  forcePathStyle?: boolean
}

/** A Google service-account key file, plus `apiEndpoint` for a GCS-compatible server. */
export interface GcsCredentials {
  client_email: string
  private_key: string
  project_id?: string
  apiEndpoint?: string
}

export interface BucketOptions {
  /** Path of the credentials file (JSON); read once, here. */
  credentialsPath?: string
  /** Calls the SDKs make for one operation; the agent retries around them with its own backoff. */
  maxAttempts?: number
}

export async function openBucket(url: string, options: BucketOptions = {}): Promise<Bucket> {
  const address = parseBucketUrl(url)
  const credentials = options.credentialsPath ? await readCredentials(options.credentialsPath) : undefined
  switch (address.scheme) {
    case 'file':
      return new FileBucket(url, address.prefix)
    // The cloud SDKs are loaded only for a bucket that needs them: together they would add tens of
    // megabytes to every box, most of which keep clips in one kind of bucket or none.
    case 's3':
      return new (await import('./s3.js')).S3Bucket(url, address, credentials as S3Credentials | undefined, options.maxAttempts ?? 2)
    case 'gs':
      return new (await import('./gcs.js')).GcsBucket(url, address, credentials as GcsCredentials | undefined)
  }
}

async function readCredentials(path: string): Promise<Record<string, unknown>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new BucketError(`cannot read the credentials file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
  }
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object')
    return parsed as Record<string, unknown>
  } catch {
    // Never the text itself: it holds the key.
    throw new BucketError(`the credentials file ${path} is not a JSON object`)
  }
}
