// What the agent must remember across restarts, written atomically so that a crash or a full disk
// mid-write leaves the previous state readable: temporary file, fsync, rename, fsync the folder.
import { randomBytes } from 'node:crypto'
import { closeSync, constants, fchownSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { DoNotFilm, ReplayServerConfig } from '@club/contract'

export interface AgentState {
  serverId?: string
  pollInterval?: number
  accessToken?: string
  /** The last configuration the server approved; recording resumes with it while the server is away. */
  config?: ReplayServerConfig
  /** The "do not film" intervals that came with it: a box restarted during one, with the server away, still keeps it. */
  doNotFilm?: DoNotFilm[]
}

export class StateStore {
  readonly path: string

  constructor(private readonly dir: string) {
    this.path = join(dir, 'state.json')
  }

  load(): AgentState {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw err
    }
    return JSON.parse(text) as AgentState
  }

  save(state: AgentState): void {
    writeFileAtomically(this.dir, this.path, JSON.stringify(state, null, 2))
  }

  update(change: (state: AgentState) => AgentState): AgentState {
    const next = change(this.load())
    this.save(next)
    return next
  }
}

/**
 * Writes a file of the state folder (mode 0600) so that a reader sees the old content or the new one,
 * never half: temporary file, fsync, rename, fsync the folder. The update installer runs this as
 * root in a folder the agent's user owns, so the temporary file has an unguessable name and is made
 * new (never a link planted there to make root write or chown another file), and it is chowned
 * through its descriptor, not its path; the rename replaces whatever entry `path` was, not what a
 * link there points to.
 */
export function writeFileAtomically(
  dir: string,
  path: string,
  text: string,
  owner?: { uid: number; gid: number },
  suffix: () => string = () => randomBytes(8).toString('hex')
): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const temporary = writePrivateTemporary(path, text, owner, suffix)
  renameSync(temporary, path)
  // The rename itself lives in the folder's entry; without this a power cut can undo it.
  const dirFd = openSync(dir, 'r')
  try {
    fsyncSync(dirFd)
  } finally {
    closeSync(dirFd)
  }
}

/**
 * A new file beside `path` (mode 0600, an unguessable name, never a link followed), written whole,
 * chowned through its descriptor and synced: what a rename or a link then puts in place. Answers its path.
 */
export function writePrivateTemporary(
  path: string,
  text: string,
  owner?: { uid: number; gid: number },
  suffix: () => string = () => randomBytes(8).toString('hex')
): string {
  const temporary = `${path}.${suffix()}.tmp`
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
  try {
    const bytes = Buffer.from(text)
    let written = 0
    while (written < bytes.length) written += writeSync(fd, bytes, written)
    // Before it is put in place, so that a reader never meets the file with an owner it cannot read.
    if (owner) fchownSync(fd, owner.uid, owner.gid)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return temporary
}
