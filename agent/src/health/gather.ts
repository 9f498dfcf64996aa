// The process work behind the health report: the disk's numbers, the temperature, the agent's memory
// and uptime. Nothing here may hold up or fail a poll: each reading is bounded and a failure is null.
import { statfs } from 'node:fs/promises'
import si from 'systeminformation'
import type { Clock } from '../clock.js'

/** Free (for the agent's user) and total bytes of the filesystem holding `dir`; null when it cannot be read. */
export async function diskSpace(dir: string): Promise<{ freeBytes: number; totalBytes: number } | null> {
  try {
    const fs = await statfs(dir)
    return { freeBytes: fs.bavail * fs.bsize, totalBytes: fs.blocks * fs.bsize }
  } catch {
    return null
  }
}

/** How long a temperature reading is kept, and how long one may take before it counts as none. */
export const TEMPERATURE_CACHE_MS = 60_000
export const TEMPERATURE_TIMEOUT_MS = 5_000

/** systeminformation's CPU package temperature: a number, or null where the hardware reports none. */
export async function cpuTemperature(): Promise<number | null> {
  const { main } = await si.cpuTemperature()
  return typeof main === 'number' && Number.isFinite(main) ? main : null
}

export interface TemperatureOptions {
  clock: Clock
  read?: () => Promise<number | null>
  timeoutMs?: number
}

/**
 * The temperature as last read, read again in the background when older than a minute: `current()`
 * never waits for the hardware (systeminformation may run a command), never throws, and answers
 * null until the first reading, or when the reading failed or took longer than its timeout.
 */
export class Temperature {
  private value: number | null = null
  private readAt?: number
  private reading?: Promise<void>

  constructor(private readonly options: TemperatureOptions) {}

  current(): number | null {
    const now = this.options.clock.now().getTime()
    if (!this.reading && (this.readAt === undefined || now - this.readAt >= TEMPERATURE_CACHE_MS || now < this.readAt)) {
      this.readAt = now
      this.reading = this.read().finally(() => (this.reading = undefined))
    }
    return this.value
  }

  /** The reading under way, for tests and for a first report that would rather wait for it (bounded). */
  settled(): Promise<void> {
    return this.reading ?? Promise.resolve()
  }

  private async read(): Promise<void> {
    const { read = cpuTemperature, timeoutMs = TEMPERATURE_TIMEOUT_MS } = this.options
    let timer: NodeJS.Timeout | undefined
    // Not unref'd: a stopping agent waits for it at most timeoutMs.
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)))
    try {
      const value = await Promise.race([read(), timeout])
      this.value = value === null ? null : Math.min(Math.max(Math.round(value * 10) / 10, -100), 250)
    } catch {
      this.value = null
    } finally {
      clearTimeout(timer)
    }
  }
}
