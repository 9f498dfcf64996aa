// Where finished clips go: the configuration's cloudStorageBucket, through a driver per scheme.
// A file:// bucket is built in; a cloud driver implements the same interface.
import { copyFile, mkdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export interface ClipStorage {
  /** Stores the file under `key` and answers where it can be found. */
  upload(localPath: string, key: string): Promise<string>
}

export class UnsupportedBucketError extends Error {
  override name = 'UnsupportedBucketError'
}

/** A bucket that is a folder (a local disk or a mounted share). */
export class FileBucketStorage implements ClipStorage {
  constructor(private readonly root: string) {}

  async upload(localPath: string, key: string): Promise<string> {
    const target = join(this.root, key)
    await mkdir(dirname(target), { recursive: true })
    await copyFile(localPath, target)
    return pathToFileURL(target).href
  }
}

/** No bucket configured: the clip stays in the clips folder and that is its location. */
export class LocalClipStorage implements ClipStorage {
  async upload(localPath: string): Promise<string> {
    return pathToFileURL(localPath).href
  }
}

export function storageFor(bucket: string | undefined): ClipStorage {
  if (!bucket) return new LocalClipStorage()
  if (bucket.startsWith('file://')) return new FileBucketStorage(fileURLToPath(bucket))
  throw new UnsupportedBucketError(`no storage driver for ${bucket.split(':')[0]}:// buckets on this agent (file:// is built in)`)
}
