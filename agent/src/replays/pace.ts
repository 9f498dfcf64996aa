// How fast a match's upload may send: a token bucket under the configuration's uploadMaxBytesPerSecond
// (pure arithmetic, on an injected clock), and the rule that a player's clip uploads first: while a
// clip uploads, the match's upload waits between slices (it is paused, not cut off, so nothing is sent
// twice). A clip's own upload is never held back.

/** The bucket's tokens (bytes that may be sent now; below zero, bytes owed) as of `at` (ms). */
export interface TokenBucket {
  tokens: number
  at: number
}

/**
 * Takes `bytes` from the bucket at `now`, refilled at `bytesPerSecond` up to one second's worth (the
 * most a cap lets through at once): answers the bucket after, and how long to wait before sending
 * them. The bytes are taken at once and owed when there are too few, so a slice larger than a
 * second's worth still goes, after its wait, and the average never exceeds the cap.
 */
export function takeTokens(bucket: TokenBucket, bytes: number, now: number, bytesPerSecond: number): { bucket: TokenBucket; waitMs: number } {
  const elapsed = Math.max(0, now - bucket.at)
  const tokens = Math.min(bytesPerSecond, bucket.tokens + (elapsed * bytesPerSecond) / 1000) - bytes
  return { bucket: { tokens, at: now }, waitMs: tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / bytesPerSecond) }
}

export interface UploadPaceOptions {
  /** The configuration's uploadMaxBytesPerSecond, read at each slice (a new configuration applies at once); undefined: no cap. */
  maxBytesPerSecond(): number | undefined
  now(): number
  sleep(ms: number): Promise<void>
}

export class UploadPace {
  private bucket: TokenBucket | undefined
  private clipsUploading = 0
  private clipsDone: { promise: Promise<void>; resolve: () => void } | undefined

  constructor(private readonly options: UploadPaceOptions) {}

  /** A clip's upload begins; the function answered says it ended. Matches wait in between. */
  clipUploading(): () => void {
    this.clipsUploading++
    let ended = false
    return () => {
      if (ended) return
      ended = true
      if (--this.clipsUploading === 0) {
        this.clipsDone?.resolve()
        this.clipsDone = undefined
      }
    }
  }

  /** Awaited by a match's upload before each slice of `bytes`: no clip uploading, then within the cap. */
  async match(bytes: number): Promise<void> {
    while (this.clipsUploading > 0) {
      if (!this.clipsDone) {
        let resolve!: () => void
        const promise = new Promise<void>((r) => (resolve = r))
        this.clipsDone = { promise, resolve }
      }
      await this.clipsDone.promise
    }
    const cap = this.options.maxBytesPerSecond()
    if (!cap) {
      this.bucket = undefined
      return
    }
    const now = this.options.now()
    // A fresh bucket starts full: the first second goes at once, as after any pause.
    const taken = takeTokens(this.bucket ?? { tokens: cap, at: now }, bytes, now, cap)
    this.bucket = taken.bucket
    if (taken.waitMs > 0) await this.options.sleep(taken.waitMs)
  }
}
