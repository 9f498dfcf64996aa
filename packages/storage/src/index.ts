// One bucket API over the three kinds of bucket a club may keep replay clips in, chosen by the URL's
// scheme: file:// (a folder or mounted share), s3:// (AWS S3 and S3-compatible stores, through the
// AWS SDK v3) and gs:// (Google Cloud Storage, through its official client). The agent uploads
// through it; the server signs download links and deletes through the same drivers (flydrive's idea,
// without its framework). Nothing here logs: keys and signatures stay out of every message.
import { readFile } from 'node:fs/promises'
import { relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { keyOf, type Bucket, type BucketAddress, type GcsCredentials, type S3Credentials } from './bucket.js'
import { BucketError } from './errors.js'
import { FileBucket, filePathOf, isBelow } from './file.js'

export { joinKey, keyOf, PACE_SLICE_BYTES, type Bucket, type BucketAddress, type GcsCredentials, type ResumableUpload, type S3Credentials, type SignedUrlOptions, type UploadOptions } from './bucket.js'
export { partSizeFor, partsToSend } from './resumable.js'
export { BucketError, BucketObjectMissingError } from './errors.js'
export { FileBucket } from './file.js'

export function parseBucketUrl(url: string): BucketAddress {
  const match = /^(file|s3|gs):\/\/([^/]*)(\/.*)?$/.exec(url)
  if (!match) throw new BucketError(`no storage driver for ${quoteScheme(url)} buckets: use file://, s3:// or gs://`)
  const scheme = match[1] as BucketAddress['scheme']
  if (scheme === 'file') return { scheme, bucket: '', prefix: fileURLToPath(url) }
  if (!match[2]) throw new BucketError(`${scheme}:// bucket URL without a bucket name`)
  return { scheme, bucket: match[2], prefix: (match[3] ?? '').replace(/^\/+|\/+$/g, '') }
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


function quoteScheme(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]
  return scheme ? `${scheme}://` : 'such'
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
