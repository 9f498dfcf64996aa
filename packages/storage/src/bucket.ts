// What the index and every driver share: the Bucket interface they implement, a bucket URL taken apart
// and the keys in it, and each cloud's credentials. Below them all, so a driver needs nothing at run
// time from index.ts (which loads the drivers): no circle.
import { BucketError } from './errors.js'

export interface SignedUrlOptions {
  expiresInSeconds: number
  /** When the link starts to be valid (an injected clock's now). */
  now: Date
}

export interface Bucket {
  /** The bucket's URL as configured (scheme://bucket/prefix). */
  readonly url: string
  /**
   * Stores a local file under `key` (below the bucket's prefix); answers its location (a URL of the
   * same scheme). With `options`, the upload is resumable and paced (a match's hours of video): see
   * UploadOptions. Without, it is a replay clip's upload as it always was.
   */
  upload(localPath: string, key: string, options?: UploadOptions): Promise<string>
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

export function joinKey(prefix: string, key: string): string {
  return prefix ? `${prefix}/${key}` : key
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

/**
 * Where a resumable upload stands, as its driver left it: kept by the caller (on disk) and handed back
 * to go on from there. Opaque to the caller but plain JSON. `size` is the local file's, so a file that
 * changed since is uploaded from zero rather than stitched from two files.
 */
export type ResumableUpload =
  /** An S3 multipart upload: its id and the parts the store acknowledged (number, ETag, bytes). */
  | { scheme: 's3'; key: string; size: number; partSize: number; uploadId: string; parts: Array<{ number: number; etag: string }> }
  /** A GCS resumable session: its URI (valid a week), which the store asks for its received bytes. */
  | { scheme: 'gs'; key: string; size: number; sessionUri: string }

export interface UploadOptions {
  /** Where an earlier attempt of this same upload stopped (what `onProgress` last said). */
  resume?: ResumableUpload
  /**
   * Called each time the store has acknowledged more (a part, a chunk): the caller writes it down, so
   * an upload cut off (a dropped connection, a restart) goes on from there. Awaited before going on.
   */
  onProgress?(state: ResumableUpload): void | Promise<void>
  /**
   * Awaited before each slice of `bytes` is sent: the caller's bandwidth cap and "a clip first" gate.
   * Throwing from it stops the upload where it is (resumable from the last acknowledged part).
   */
  pace?(bytes: number): Promise<void>
}

/** Bytes read at a time and handed to `pace`: small enough that a cap is smooth, big enough to be cheap. */
export const PACE_SLICE_BYTES = 64 * 1024
