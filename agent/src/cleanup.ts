// Retention: deletes segments and clips older than the retention, then oldest-first while free
// disk is below the minimum. Deciding is pure (filesToDelete); the job around it only lists and unlinks.
import { readdirSync, statSync, unlinkSync } from 'node:fs'
import { statfs } from 'node:fs/promises'
import { join } from 'node:path'
import cron, { type ScheduledTask } from 'node-cron'
import type { Logger } from './log.js'
import { listSegments } from './recorder/segments.js'

export interface StoredFile {
  path: string
  /** When its footage starts (segments) or when it was written (clips), ms since the epoch. */
  time: number
  size: number
}

export interface CleanupPolicy {
  now: number
  retentionMs: number
  freeBytes: number
  minFreeBytes: number
  /** Never deleted: segments an export is reading, segments ffmpeg is writing. */
  keep: ReadonlySet<string>
}

export function filesToDelete(files: readonly StoredFile[], policy: CleanupPolicy): string[] {
  const candidates = files.filter((f) => !policy.keep.has(f.path)).sort((a, b) => a.time - b.time || a.path.localeCompare(b.path))
  const doomed: string[] = []
  let free = policy.freeBytes
  for (const file of candidates) {
    const expired = policy.now - file.time > policy.retentionMs
    if (!expired && free >= policy.minFreeBytes) break
    doomed.push(file.path)
    free += file.size
  }
  return doomed
}

export interface CleanupOptions {
  recordingsDir: string
  clipsDir: string
  retentionHours: number
  minFreeDiskMb: number
  schedule: string
  /** Segments in use by exports at this moment. */
  inUse: () => ReadonlySet<string>
  log: Logger
}

export class Cleanup {
  private task?: ScheduledTask
  /** The last run, for the box's page: when, and how many files it deleted. */
  lastRun?: { at: Date; deleted: number }

  constructor(private readonly options: CleanupOptions) {}

  /** Turns the job on or off, as the approved configuration's cleanupEnabled says. */
  setEnabled(enabled: boolean): void {
    if (enabled && !this.task) {
      this.task = cron.schedule(this.options.schedule, () => this.runOnce().catch((err) => this.options.log.error({ err }, 'cleanup failed')), { noOverlap: true })
    } else if (!enabled && this.task) {
      void this.task.stop()
      this.task = undefined
    }
  }

  get enabled(): boolean {
    return this.task !== undefined
  }

  async runOnce(now = Date.now()): Promise<string[]> {
    const { recordingsDir, clipsDir, log } = this.options
    const files: StoredFile[] = []
    const keep = new Set(this.options.inUse())
    for (const camera of subfolders(recordingsDir)) {
      const segments = listSegments(join(recordingsDir, camera))
      const newest = segments.at(-1)
      if (newest) keep.add(newest.path)
      for (const s of segments) files.push({ path: s.path, time: s.start.getTime(), size: s.size })
    }
    for (const name of safeReaddir(clipsDir)) {
      if (!name.endsWith('.mp4')) continue
      const stat = statSync(join(clipsDir, name), { throwIfNoEntry: false })
      if (stat?.isFile()) files.push({ path: join(clipsDir, name), time: stat.mtimeMs, size: stat.size })
    }
    const fs = await statfs(recordingsDir)
    const doomed = filesToDelete(files, {
      now,
      retentionMs: this.options.retentionHours * 3600_000,
      freeBytes: fs.bavail * fs.bsize,
      minFreeBytes: this.options.minFreeDiskMb * 1024 * 1024,
      keep
    })
    // ffmpeg's segment lists outlive their segments; one untouched for the whole retention lists none.
    for (const camera of subfolders(recordingsDir)) {
      for (const name of safeReaddir(join(recordingsDir, camera))) {
        const path = join(recordingsDir, camera, name)
        const stat = name.endsWith('.csv') ? statSync(path, { throwIfNoEntry: false }) : undefined
        if (stat && now - stat.mtimeMs > this.options.retentionHours * 3600_000) doomed.push(path)
      }
    }
    for (const path of doomed) {
      try {
        unlinkSync(path)
      } catch (err) {
        log.warn({ err: (err as Error).message, path }, 'cannot delete')
      }
    }
    if (doomed.length) log.info({ deleted: doomed.length }, 'cleanup deleted old recordings and clips')
    this.lastRun = { at: new Date(now), deleted: doomed.length }
    return doomed
  }

  stop(): void {
    this.setEnabled(false)
  }
}

export async function freeDiskBytes(dir: string): Promise<number | null> {
  try {
    const fs = await statfs(dir)
    return fs.bavail * fs.bsize
  } catch {
    return null
  }
}

/** The recorded segments' total size, every camera's folder. */
export function recordingsBytes(recordingsDir: string): number {
  let total = 0
  for (const camera of subfolders(recordingsDir)) for (const s of listSegments(join(recordingsDir, camera))) total += s.size
  return total
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

function subfolders(dir: string): string[] {
  return safeReaddir(dir).filter((name) => statSync(join(dir, name), { throwIfNoEntry: false })?.isDirectory())
}
