// One bucket API over the three kinds of bucket a club may keep replay clips in, chosen by the URL's
// scheme: file:// (a folder or mounted share), s3:// (AWS S3 and S3-compatible stores, through the
// AWS SDK v3) and gs:// (Google Cloud Storage, through its official client). The agent uploads
// through it; the server signs download links and deletes through the same drivers (flydrive's idea,
// without its framework). Nothing here logs: keys and signatures stay out of every message.
import { copyFile, mkdir, readFile, rm } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

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

export class BucketError extends Error {
  override name = 'BucketError'
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

/** The file a file:// URL names, with `..` and `.` resolved, or an error when it names none. */
function filePathOf(location: string): string {
  try {
    return resolve(fileURLToPath(location))
  } catch {
    throw new BucketError('the location is not a file:// URL of a file')
  }
}

/**
 * Whether `location` lies below the bucket URL `bucketUrl` (its bucket and prefix), after decoding:
 * what a box reports is checked with this before the server signs links to it or deletes it.
 */
export function locationInBucket(bucketUrl: string, location: string): boolean {
  try {
    const address = parseBucketUrl(bucketUrl)
    if (address.scheme === 'file') {
      const root = resolve(address.prefix)
      return filePathOf(location).startsWith(root.endsWith(sep) ? root : `${root}${sep}`)
    }
    const key = keyOf(address, location)
    return !key.split('/').includes('..') && (address.prefix === '' || key.startsWith(`${address.prefix}/`))
  } catch {
    return false
  }
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

/** A bucket that is a folder: a local disk or a share the server mounts too. */
export class FileBucket implements Bucket {
  constructor(
    readonly url: string,
    private readonly root: string
  ) {}

  async upload(localPath: string, key: string): Promise<string> {
    const target = join(this.root, key)
    await mkdir(dirname(target), { recursive: true })
    await copyFile(localPath, target)
    return pathToFileURL(target).href
  }

  async remove(location: string): Promise<void> {
    await rm(this.pathOf(location), { force: true })
  }

  /** The file a location names, refused when it lies outside the bucket's folder. */
  pathOf(location: string): string {
    // Resolved first: %2e%2e decodes to `..`, which a prefix test on the raw path would let through.
    const path = filePathOf(location)
    const root = resolve(this.root)
    if (!path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)) throw new BucketError('the location is not in this bucket')
    return path
  }

  async signedUrl(): Promise<string> {
    throw new BucketError('a file:// bucket has no signed links of its own: the server serves them')
  }
}

