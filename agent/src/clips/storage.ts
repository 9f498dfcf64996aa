// Where finished clips go: the configuration's cloudStorageBucket, through a driver per scheme.
// A file:// bucket is @club/storage's FileBucket, the one the server reads it with (a symbolic link
// in the folder leading out of it is refused on upload as on download).
import { FileBucket } from '@club/storage'
import { fileURLToPath, pathToFileURL } from 'node:url'

export interface ClipStorage {
  /** Stores the file under `key` and answers where it can be found. */
  upload(localPath: string, key: string): Promise<string>
}

export class UnsupportedBucketError extends Error {
  override name = 'UnsupportedBucketError'
}

/** No bucket configured: the clip stays in the clips folder and that is its location. */
export class LocalClipStorage implements ClipStorage {
  async upload(localPath: string): Promise<string> {
    return pathToFileURL(localPath).href
  }
}

export function storageFor(bucket: string | undefined): ClipStorage {
  if (!bucket) return new LocalClipStorage()
  if (bucket.startsWith('file://')) return new FileBucket(bucket, fileURLToPath(bucket))
  throw new UnsupportedBucketError(`no storage driver for ${bucket.split(':')[0]}:// buckets on this agent (file:// is built in)`)
}
