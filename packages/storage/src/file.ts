// The file:// driver: a bucket that is a folder, a local disk or a share the server mounts too.
import { constants, createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import type { Stats } from 'node:fs'
import { copyFile, lstat, mkdir, open, readlink, realpath, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BucketError, BucketObjectMissingError } from './errors.js'
import type { Bucket, UploadOptions } from './bucket.js'
import { pacedRead } from './resumable.js'

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
 * Refuses what is not one regular file: a folder, a device, or a file with other names (nlink > 1),
 * since a hard link in the bucket to a file elsewhere passes every path check.
 */
function refuseOtherThanOneFile(stats: Stats): void {
  if (!stats.isFile()) throw new BucketError('the location is not a file')
  if (stats.nlink > 1) throw new BucketError('the location is a file with other names (a hard link): refused')
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

  /** Copies again from the start each time (`resume` is not used): a folder or a mounted share is near. */
  async upload(localPath: string, key: string, options?: UploadOptions): Promise<string> {
    const target = join(this.root, key)
    if (!isBelow(resolve(this.root), resolve(target))) throw new BucketError(`the key ${JSON.stringify(key)} is not in this bucket`)
    await mkdir(dirname(target), { recursive: true })
    // The folder the clip goes in, as it really is: a linked folder pointing outside is refused.
    const folder = await realpath(dirname(target))
    await this.checkFolder(folder)
    // Copied beside the target under a fresh name, then renamed over it: a link already at the
    // target is replaced, never written through.
    const temporary = join(folder, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`)
    try {
      if (options?.pace) {
        // Paced (a match's copy to a share over the venue's network): read through the caller's cap.
        await pipeline(pacedRead(localPath, 0, Number.MAX_SAFE_INTEGER, options.pace.bind(options)), createWriteStream(temporary, { flags: 'wx' }))
      } else {
        await copyFile(localPath, temporary, constants.COPYFILE_EXCL)
      }
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
    await this.checked(folder)
    // rm removes a link itself, not what it points to: the folder is all that had to be checked, and
    // a folder swapped for a link since must not be followed. Where /proc lets it, the folder is
    // opened, checked where it really is, and the name removed inside the folder opened.
    let handle: FileHandle
    try {
      handle = await open(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw new BucketError('the location leads out of this bucket (a folder swapped for a symbolic link)')
    }
    try {
      const opened = await this.openedPath(handle.fd)
      if (opened === null) return await rm(join(folder, basename(path)), { force: true })
      await this.checkFolder(opened)
      await rm(`/proc/self/fd/${handle.fd}/${basename(path)}`, { force: true })
    } finally {
      await handle.close()
    }
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
    refuseOtherThanOneFile(await lstat(real))
    return real
  }

  /**
   * Opens the file a location names for reading, after realPathOf's checks, then checks what it
   * opened: O_NOFOLLOW guards only the last name, and a writer of the share can swap a parent folder
   * for a link between the check and the open. The open descriptor's own path (/proc/self/fd) must
   * still lie below the bucket folder, and the file must have no other name (a hard link to a file
   * elsewhere passes every path check). The caller closes the handle.
   */
  async openForRead(location: string): Promise<{ handle: FileHandle; size: number }> {
    const real = await this.realPathOf(location)
    await this.checked(real)
    let handle: FileHandle
    try {
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BucketObjectMissingError('no file is stored at the location')
      throw new BucketError('the location cannot be opened')
    }
    try {
      const stats = await handle.stat()
      refuseOtherThanOneFile(stats)
      await this.checkOpened(handle, real, stats)
      return { handle, size: stats.size }
    } catch (err) {
      await handle.close()
      throw err
    }
  }

  /**
   * Called between realPathOf's checks and the open, doing nothing: a test swaps a folder here to
   * show the open is checked, deterministically rather than by racing.
   */
  protected async checked(_real: string): Promise<void> {}

  /** Where an open descriptor's file really is, by /proc; null where there is no /proc (another system, a container without it). */
  protected async openedPath(fd: number): Promise<string | null> {
    try {
      return await readlink(`/proc/self/fd/${fd}`)
    } catch {
      return null
    }
  }

  /**
   * Refuses an open file that is not where the path checks found it: by the descriptor's own path
   * where /proc is mounted (Linux), else by comparing its device and inode with what the real path
   * names now (a swapped folder, even one swapped back since, names another file).
   */
  private async checkOpened(handle: FileHandle, real: string, stats: Stats): Promise<void> {
    const root = await this.realRoot()
    const opened = await this.openedPath(handle.fd)
    if (opened !== null) {
      if (!isBelow(root, opened)) throw new BucketError('the location leads out of this bucket (a folder swapped for a symbolic link)')
      return
    }
    let now: Stats
    try {
      const again = await realpath(real)
      if (!isBelow(root, again)) throw new BucketError('the location leads out of this bucket (a folder swapped for a symbolic link)')
      now = await stat(again)
    } catch (err) {
      if (err instanceof BucketError) throw err
      throw new BucketError('the location changed while it was opened')
    }
    if (now.dev !== stats.dev || now.ino !== stats.ino) throw new BucketError('the location changed while it was opened (a folder swapped for a symbolic link)')
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
