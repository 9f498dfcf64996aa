// One bucket API over the three kinds of bucket a club may keep replay clips in, chosen by the URL's
// scheme: file:// (a folder or mounted share), s3:// (AWS S3 and S3-compatible stores, through the
// AWS SDK v3) and gs:// (Google Cloud Storage, through its official client). The agent uploads
// through it; the server signs download links and deletes through the same drivers (flydrive's idea,
// without its framework). Nothing here logs: keys and signatures stay out of every message.
import { createReadStream } from 'node:fs'
import { copyFile, mkdir, readFile, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { Storage } from '@google-cloud/storage'

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

/** The key of `location` in `address`'s bucket, or an error when it lies elsewhere. */
function keyOf(address: BucketAddress, location: string): string {
  const own = `${address.scheme}://${address.bucket}/`
  if (!location.startsWith(own)) throw new BucketError(`the location is not in bucket ${address.scheme}://${address.bucket}`)
  return decodeURIComponent(location.slice(own.length))
}

function joinKey(prefix: string, key: string): string {
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
    case 's3':
      return new S3Bucket(url, address, credentials as S3Credentials | undefined, options.maxAttempts ?? 2)
    case 'gs':
      return new GcsBucket(url, address, credentials as GcsCredentials | undefined)
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
    const path = fileURLToPath(location)
    const root = this.root.endsWith('/') ? this.root : `${this.root}/`
    if (!path.startsWith(root)) throw new BucketError('the location is not in this bucket')
    return path
  }

  async signedUrl(): Promise<string> {
    throw new BucketError('a file:// bucket has no signed links of its own: the server serves them')
  }
}

export class S3Bucket implements Bucket {
  readonly client: S3Client

  constructor(
    readonly url: string,
    private readonly address: BucketAddress,
    credentials: S3Credentials | undefined,
    maxAttempts: number
  ) {
    this.client = new S3Client({
      region: credentials?.region ?? 'us-east-1',
      ...(credentials?.endpoint ? { endpoint: credentials.endpoint } : {}),
      // Path-style: S3-compatible stores rarely have a DNS name per bucket.
      forcePathStyle: credentials?.forcePathStyle ?? credentials?.endpoint !== undefined,
      ...(credentials ? { credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}) } } : {}),
      // SDK 3.729+ adds CRC checksums (and aws-chunked bodies) to every upload by default, which many
      // S3-compatible stores refuse; only where the API requires one.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts
    })
  }

  async upload(localPath: string, key: string): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    const size = (await stat(localPath)).size
    // Multipart above 5 MiB parts (lib-storage), a plain PUT below: a 30 s clip is a few megabytes.
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.address.bucket, Key: fullKey, Body: createReadStream(localPath), ContentType: 'video/mp4', ContentLength: size },
      partSize: 5 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false
    })
    await upload.done()
    return `s3://${this.address.bucket}/${fullKey}`
  }

  async remove(location: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) }))
  }

  async signedUrl(location: string, options: SignedUrlOptions): Promise<string> {
    const command = new GetObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) })
    return getSignedUrl(this.client, command, { expiresIn: options.expiresInSeconds, signingDate: options.now })
  }
}

export class GcsBucket implements Bucket {
  readonly storage: Storage

  constructor(
    readonly url: string,
    private readonly address: BucketAddress,
    credentials: GcsCredentials | undefined
  ) {
    this.storage = new Storage({
      ...(credentials ? { credentials: { client_email: credentials.client_email, private_key: credentials.private_key } } : {}),
      ...(credentials?.project_id ? { projectId: credentials.project_id } : {}),
      ...(credentials?.apiEndpoint ? { apiEndpoint: credentials.apiEndpoint } : {}),
      // One try per call: the agent's own backoff decides when to try again.
      retryOptions: { autoRetry: false }
    })
  }

  async upload(localPath: string, key: string): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    await this.storage.bucket(this.address.bucket).upload(localPath, {
      destination: fullKey,
      // A resumable session: a large clip on a venue's uplink survives a dropped connection.
      resumable: true,
      contentType: 'video/mp4',
      validation: false
    })
    return `gs://${this.address.bucket}/${fullKey}`
  }

  async remove(location: string): Promise<void> {
    await this.storage.bucket(this.address.bucket).file(keyOf(this.address, location)).delete({ ignoreNotFound: true })
  }

  async signedUrl(location: string, options: SignedUrlOptions): Promise<string> {
    const [url] = await this.storage
      .bucket(this.address.bucket)
      .file(keyOf(this.address, location))
      .getSignedUrl({ version: 'v4', action: 'read', accessibleAt: options.now, expires: options.now.getTime() + options.expiresInSeconds * 1000 })
    return url
  }
}

/** A URL with its signature replaced, for a log line: the rest tells what was signed and until when. */
export function withoutSignature(url: string): string {
  return url.replace(/([?&](?:X-Amz-Signature|X-Goog-Signature|signature|Signature)=)[^&]*/gi, '$1…')
}
