// Footage taken down by the club's staff (the status answer's footageTakedowns): the segments of every
// camera filming the court that overlap the interval are deleted, then the deletion is confirmed to
// the server. Deciding which files go is pure (footageToDelete); the shell lists, unlinks and confirms.
import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { Camera, FootageTakedownOrder } from '@club/contract'
import type { Logger } from '../log.js'
import { listSegments, type Segment } from './segments.js'

/**
 * The segments of each takedown: every camera whose courtIds name the court (enabled or not: a camera
 * switched off since still holds what it filmed) and each of its segments overlapping [start, end).
 * A segment lasts its listed duration; one not yet listed (being written, or left by a run that
 * stopped) until the next one starts, and the newest of them without end, since ffmpeg may still be
 * writing the minutes taken down. A takedown whose dates do not parse deletes nothing.
 */
export function footageToDelete(
  takedowns: readonly FootageTakedownOrder[],
  cameras: readonly Camera[],
  segmentsOf: (cameraId: string) => readonly Segment[]
): Array<{ id: string; paths: string[] }> {
  return takedowns.map((takedown) => {
    const start = Date.parse(takedown.start)
    const end = Date.parse(takedown.end)
    if (!Number.isFinite(start) || !Number.isFinite(end)) return { id: takedown.id, paths: [] }
    const filming = cameras.filter((c) => (c.courtIds ?? []).includes(takedown.court.id))
    const paths = filming.flatMap((camera) => {
      const segments = segmentsOf(camera.id)
      return segments
        .filter((segment, i) => {
          const from = segment.start.getTime()
          const next = segments[i + 1]
          const until = segment.duration !== undefined ? from + segment.duration * 1000 : next ? next.start.getTime() : Infinity
          return from < end && until > start
        })
        .map((segment) => segment.path)
    })
    return { id: takedown.id, paths }
  })
}

export interface FootageTakedownsOptions {
  recordingsDir: string
  /** Tells the server a takedown's minutes are gone, with how many files went. */
  confirm: (id: string, deletedFiles: number) => Promise<void>
  log: Logger
}

/**
 * Carries out the takedowns a status answer names, one pass at a time. A takedown is confirmed once;
 * one whose confirmation failed is deleted (nothing left, 0 files) and confirmed again with the next answer.
 */
export class FootageTakedowns {
  private running: Promise<void> = Promise.resolve()
  /** Confirmed, and so gone from the server's next answer: not done again meanwhile. */
  private readonly confirmed = new Set<string>()
  /** Files deleted for a takedown not yet confirmed: the count a retried confirmation reports. */
  private readonly deleted = new Map<string, number>()

  constructor(private readonly options: FootageTakedownsOptions) {}

  /** Applies `takedowns` after any pass under way; resolves when this pass is done. */
  apply(takedowns: readonly FootageTakedownOrder[], cameras: readonly Camera[]): Promise<void> {
    const pass = this.running.then(() => this.pass(takedowns, cameras))
    this.running = pass.catch(() => undefined)
    return pass
  }

  private async pass(takedowns: readonly FootageTakedownOrder[], cameras: readonly Camera[]): Promise<void> {
    const { recordingsDir, log } = this.options
    const listed = new Set(takedowns.map((t) => t.id))
    for (const id of this.confirmed) if (!listed.has(id)) this.confirmed.delete(id)
    const todo = takedowns.filter((t) => !this.confirmed.has(t.id))
    if (todo.length === 0) return
    const segments = new Map<string, Segment[]>()
    const segmentsOf = (cameraId: string) => {
      if (!segments.has(cameraId)) segments.set(cameraId, listSegments(join(recordingsDir, cameraId)))
      return segments.get(cameraId)!
    }
    for (const { id, paths } of footageToDelete(todo, cameras, segmentsOf)) {
      let count = this.deleted.get(id) ?? 0
      for (const path of paths) {
        try {
          unlinkSync(path)
          count++
        } catch (err) {
          // Gone already (cleanup got there first) is what was wanted; anything else is not confirmed.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
            log.error({ err: (err as Error).message, path, takedown: id }, 'cannot delete footage taken down')
            return
          }
        }
      }
      this.deleted.set(id, count)
      await this.options.confirm(id, count)
      this.deleted.delete(id)
      this.confirmed.add(id)
      log.info({ takedown: id, deletedFiles: count }, 'footage taken down deleted')
    }
  }
}
