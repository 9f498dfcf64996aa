// The update's files in the state folder, read and written by the agent (its own user) and by the
// installer (root), which keeps the folder's owner on what it writes.
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomically } from '../control/state.js'
import { updateFiles, type InstallRequest, type UpdateRecord } from './decide.js'

/** Why a file was not read as a plain file of its own. */
export class NotAPlainFile extends Error {
  override name = 'NotAPlainFile'
}

/** The largest JSON file of the update read (request, record, word of the new version). */
const MAX_JSON_BYTES = 64 * 1024

/**
 * The bytes of `path`, opened without following a symbolic link (O_NOFOLLOW) nor blocking on a FIFO,
 * and only if it is a regular file of `size` bytes (at most `maxBytes`) checked before reading. The
 * installer runs as root over a folder the agent's user writes: a link there must not make it read
 * another file (a root-only one, a device). O_NOFOLLOW guards only the last name, so the file opened
 * must also be the very one the path names now, compared by device and inode with lstat: a folder
 * swapped for a link around the open would show another file.
 */
export function readPlainFile(path: string, expected: { size?: number; maxBytes?: number } = {}): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const opened = fstatSync(fd)
    if (!opened.isFile()) throw new NotAPlainFile(`${path} is not a regular file`)
    const named = lstatSync(path)
    if (named.dev !== opened.dev || named.ino !== opened.ino) throw new NotAPlainFile(`${path} changed while it was opened`)
    if (expected.size !== undefined && opened.size !== expected.size) throw new NotAPlainFile(`${path} is ${opened.size} bytes, not the release's ${expected.size}`)
    if (expected.maxBytes !== undefined && opened.size > expected.maxBytes) throw new NotAPlainFile(`${path} is larger than ${expected.maxBytes} bytes`)
    return readFileSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Throws NotAPlainFile unless `dir` is a directory itself (not a symbolic link to one). */
export function assertRealDirectory(dir: string): void {
  if (!lstatSync(dir).isDirectory()) throw new NotAPlainFile(`${dir} is not a directory (a symbolic link?)`)
}

export class UpdateFiles {
  readonly dir: string

  constructor(readonly stateDir: string) {
    this.dir = join(stateDir, updateFiles.dir)
  }

  path(name: string): string {
    return join(this.dir, name)
  }

  private read<T>(path: string): T | undefined {
    try {
      return JSON.parse(readPlainFile(path, { maxBytes: MAX_JSON_BYTES }).toString('utf8')) as T
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // ELOOP: a symbolic link, which O_NOFOLLOW refuses; read as no file at all.
      if (code === 'ENOENT' || code === 'ELOOP' || err instanceof SyntaxError || err instanceof NotAPlainFile) return undefined
      throw err
    }
  }

  private write(dir: string, path: string, value: unknown): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    // Written by root (the installer), the file must stay readable by the agent's user.
    const { uid, gid } = statSync(this.stateDir)
    writeFileAtomically(dir, path, JSON.stringify(value, null, 2), process.getuid?.() === 0 ? { uid, gid } : undefined)
  }

  record(): UpdateRecord | undefined {
    return this.read<UpdateRecord>(join(this.stateDir, updateFiles.record))
  }

  saveRecord(record: UpdateRecord | undefined): void {
    const path = join(this.stateDir, updateFiles.record)
    if (record) this.write(this.stateDir, path, record)
    else rmSync(path, { force: true })
  }

  request(): InstallRequest | undefined {
    return this.read<InstallRequest>(this.path(updateFiles.request))
  }

  saveRequest(request: InstallRequest): void {
    this.write(this.dir, this.path(updateFiles.request), request)
  }

  polled(): { version: string; at: string } | undefined {
    return this.read(join(this.stateDir, updateFiles.polled))
  }

  savePolled(version: string, at: Date): void {
    this.write(this.stateDir, join(this.stateDir, updateFiles.polled), { version, at: at.toISOString() })
  }

  forgetPolled(): void {
    rmSync(join(this.stateDir, updateFiles.polled), { force: true })
  }

  /** The fixed folder updates/ also for the first write, owned like the state folder. */
  ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
  }
}
