// The file:// driver: a bucket that is a folder, a local disk or a share the server mounts too.
import { constants } from 'node:fs'
import { copyFile, lstat, mkdir, open, realpath, rename, rm, type FileHandle } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BucketError, BucketObjectMissingError } from './errors.js'
import type { Bucket } from './bucket.js'

/** The file a file:// URL names, with `..` and `.` resolved, or an error when it names none. */
export function filePathOf(location: string): string {
  try {
    return resolve(fileURLToPath(location))
  } catch {
    throw new BucketError('the location is not a file:// URL of a file')
  }
}

/** Whether `path` lies strictly below the folder `root` (both absolute and resolved). */
export function isBelow(root: string, path: string): boolean {
  return path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)
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
