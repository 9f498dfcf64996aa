// What the agent must remember across restarts, written atomically so that a crash or a full disk
// mid-write leaves the previous state readable: temporary file, fsync, rename, fsync the folder.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { ReplayServerConfig } from '@club/contract'

export interface AgentState {
  serverId?: string
  pollInterval?: number
  accessToken?: string
  /** The last configuration the server approved; recording resumes with it while the server is away. */
  config?: ReplayServerConfig
  /** The pendingUpdate version the update command already ran for. */
  updateRanFor?: string
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
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const temporary = `${this.path}.${process.pid}.tmp`
    writeDurably(temporary, JSON.stringify(state, null, 2))
    renameSync(temporary, this.path)
    // The rename itself lives in the folder's entry; without this a power cut can undo it.
    const dirFd = openSync(this.dir, 'r')
    try {
      fsyncSync(dirFd)
    } finally {
      closeSync(dirFd)
    }
  }

  update(change: (state: AgentState) => AgentState): AgentState {
    const next = change(this.load())
    this.save(next)
    return next
  }
}

function writeDurably(path: string, text: string): void {
  const fd = openSync(path, 'w', 0o600)
  try {
    const bytes = Buffer.from(text)
    let written = 0
    while (written < bytes.length) written += writeSync(fd, bytes, written)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
