// One bucket API over the three kinds of bucket a club may keep replay clips in, chosen by the URL's
// scheme: file:// (a folder or mounted share), s3:// (AWS S3 and S3-compatible stores, through the
// AWS SDK v3) and gs:// (Google Cloud Storage, through its official client). The agent uploads
// through it; the server signs download links and deletes through the same drivers (flydrive's idea,
// without its framework). Nothing here logs: keys and signatures stay out of every message.
import { constants } from 'node:fs'
import { copyFile, lstat, mkdir, open, readFile, realpath, rename, rm, type FileHandle } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join, resolve, sep } from 'node:path'
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

/** The location names nothing stored (a file:// clip deleted, or never written). */
export class BucketObjectMissingError extends BucketError {
  override name = 'BucketObjectMissingError'
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

/** Whether `path` lies strictly below the folder `root` (both absolute and resolved). */
function isBelow(root: string, path: string): boolean {
  return path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)
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

/**
 * A bucket that is a folder: a local disk or a share the server mounts too. Every path it writes,
 * reads or deletes is resolved to where it really is (symbolic links followed) and refused unless it
 * lies below the folder's own real path: a link planted in the folder (by a box, or anyone who can
 * write the share) never makes the server read, overwrite or delete a file elsewhere.
 */
export class FileBucket implements Bucket {
  constructor(
    readonly url: string,
    private readonly root: string
  ) {}

  async upload(localPath: string, key: string): Promise<string> {
    const target = join(this.root, key)
    if (!isBelow(resolve(this.root), resolve(target))) throw new BucketError(`the key ${JSON.stringify(key)} is not in this bucket`)
    await mkdir(dirname(target), { recursive: true })
    // The folder the clip goes in, as it really is: a linked folder pointing outside is refused.
    const folder = await realpath(dirname(target))
    await this.checkFolder(folder)
    // Copied beside the target under a fresh name, then renamed over it: a link already at the
    // target is replaced, never written through.
    const temporary = join(folder, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`)
    await copyFile(localPath, temporary, constants.COPYFILE_EXCL)
    try {
      await rename(temporary, join(folder, basename(target)))
    } catch (err) {
      await rm(temporary, { force: true })
      throw err
    }
    return pathToFileURL(target).href
  }

  async remove(location: string): Promise<void> {
    const path = this.pathOf(location)
    let folder: string
    try {
      folder = await realpath(dirname(path))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    await this.checkFolder(folder)
    // rm removes a link itself, not what it points to: the folder is all that had to be checked.
    await rm(join(folder, basename(path)), { force: true })
  }

  /** The file a location names, by its text, refused when it lies outside the bucket's folder. */
  pathOf(location: string): string {
    // Resolved first: %2e%2e decodes to `..`, which a prefix test on the raw path would let through.
    const path = filePathOf(location)
    if (!isBelow(resolve(this.root), path)) throw new BucketError('the location is not in this bucket')
    return path
  }

  /**
   * Where the file a location names really is (every symbolic link followed), refused unless it is a
   * regular file below the bucket folder's real path; BucketObjectMissingError when there is none.
   */
  async realPathOf(location: string): Promise<string> {
    const path = this.pathOf(location)
    let real: string
    try {
      real = await realpath(path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BucketObjectMissingError('no file is stored at the location')
      throw new BucketError('the location cannot be resolved')
    }
    if (!isBelow(await this.realRoot(), real)) throw new BucketError('the location leads out of this bucket (a symbolic link)')
    if (!(await lstat(real)).isFile()) throw new BucketError('the location is not a file')
    return real
  }

  /**
   * Opens the file a location names for reading, after realPathOf's checks; O_NOFOLLOW refuses a link
   * swapped in at the last step between the check and the open. The caller closes the handle.
   */
  async openForRead(location: string): Promise<{ handle: FileHandle; size: number }> {
    const real = await this.realPathOf(location)
    let handle: FileHandle
    try {
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BucketObjectMissingError('no file is stored at the location')
      throw new BucketError('the location cannot be opened')
    }
    const stats = await handle.stat()
    if (!stats.isFile()) {
      await handle.close()
      throw new BucketError('the location is not a file')
    }
    return { handle, size: stats.size }
  }

  async signedUrl(): Promise<string> {
    throw new BucketError('a file:// bucket has no signed links of its own: the server serves them')
  }

  /** Refuses a real folder path that is neither the bucket's folder nor below it. */
  private async checkFolder(folder: string): Promise<void> {
    const root = await this.realRoot()
    if (folder !== root && !isBelow(root, folder)) throw new BucketError('the location leads out of this bucket (a symbolic link)')
  }

  /** The folder's own real path (it may itself be reached through a link, such as /var → /private/var). */
  private async realRoot(): Promise<string> {
    try {
      return await realpath(this.root)
    } catch {
      throw new BucketError('the bucket folder does not exist')
    }
  }
}
