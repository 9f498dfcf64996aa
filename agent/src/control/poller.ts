// The register/poll loop: registers once, then polls the status at the interval the server advised,
// with jitter, capped exponential backoff while the server is away, and Retry-After on 429.
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { BoxHealthReport, ItemRef, ReplayServerRegistrationRequest, ReplayServerStatus, ReplayServerStatusAnswer, ReplayServerStatusQuery } from '@club/contract'
import { systemClock, type Clock } from '../clock.js'
import { encodeHealth } from '../health/report.js'
import { healthToSend, type SentHealth } from '../health/send.js'
import type { Identity } from '../identity.js'
import type { Logger } from '../log.js'
import { healthSignatureFor, keyAdoptionFor, keyProofFor, type BoxKey } from './box-key.js'
import { RequestRefusedError, type ControlClient } from './client.js'
import type { StateStore } from './state.js'

const DEFAULT_POLL_SECONDS = 30
const BACKOFF_BASE_MS = 2_000
export const BACKOFF_CAP_MS = 5 * 60_000
/** How often a box polls while replays wait for it and its fetch of them has not yet emptied the list. */
export const REPLAY_WAITING_POLL_MS = 2_000

/** `seconds` spread by up to ±10%, so a venue full of boxes rebooted together does not poll in step. */
export function jittered(ms: number, random: () => number): number {
  return Math.round(ms * (0.9 + 0.2 * random()))
}

/** Delay before retry number `failures` (1, 2, ...): doubling from 2 s, never above 5 minutes. */
export function backoffDelay(failures: number, random: () => number): number {
  const exponential = BACKOFF_BASE_MS * 2 ** Math.min(Math.max(failures - 1, 0), 20)
  return Math.min(jittered(Math.min(exponential, BACKOFF_CAP_MS), random), BACKOFF_CAP_MS)
}

/** A rejected or revoked box keeps asking, but rarely: an admin may change their mind. */
export function slowPollMs(pollIntervalSeconds: number): number {
  return Math.min(Math.max(pollIntervalSeconds * 10, 60), 3600) * 1000
}

export type ControlStatus = ReplayServerStatus | 'UNREGISTERED'

export interface PollerOptions {
  client: ControlClient
  state: StateStore
  identity: Identity
  displayName?: string
  publicUrl?: string
  log: Logger
  /** The box key: each registration carries a fresh proof of it, so the server knows the box again. */
  boxKey?: BoxKey
  clock?: Clock
  random?: () => number
  /** What else each poll reports (the update's state). */
  extraReport?: () => Pick<ReplayServerStatusQuery, 'updateState' | 'updateVersion' | 'updateReason'>
  /**
   * The box's health now (cameras, disk, itself); a poll carries it when healthToSend says so. Must
   * not throw for long: a failure is logged and that poll goes without.
   */
  health?: () => Promise<BoxHealthReport> | BoxHealthReport
  /** A monotonic clock in milliseconds (performance.now) for the poll's round trip. */
  monotonic?: () => number
  /** Called with every full status answer, after the state was persisted. */
  onStatus(answer: ReplayServerStatusAnswer): Promise<void> | void
  /** Called when a poll answers "not modified", with the answer it stands for. */
  onUnchanged?(answer: ReplayServerStatusAnswer): Promise<void> | void
}

export class StatusPoller {
  status: ControlStatus = 'UNREGISTERED'
  /** Whether the last call reached the server. */
  connected = false
  /** The area the last full answer named (approved boxes only). */
  area: ItemRef | null = null
  lastContactAt?: Date
  /** Replays waiting for this box, as the last full answer said: while any, polls come sooner. */
  private replayRequests = 0
  private failures = 0
  private etag?: string
  private lastAnswer?: ReplayServerStatusAnswer
  /** The last health report the server received; undefined: none since start or registration. */
  private healthSent?: SentHealth
  /** The round trip of the last poll the server answered, ms: the next signed poll says it. */
  private roundTripMs?: number
  private readonly random: () => number

  constructor(private readonly options: PollerOptions) {
    this.random = options.random ?? Math.random
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const delay = await this.step()
      try {
        await sleep(delay, undefined, { signal })
      } catch {
        return
      }
    }
  }

  /** One register or poll; answers how long to wait before the next. */
  async step(): Promise<number> {
    const { client, state, identity, log } = this.options
    let health: { report: BoxHealthReport; encoded: string | null } | undefined
    try {
      const saved = state.load()
      if (!saved.serverId) return await this.register()
      const { boxKey, clock = systemClock, monotonic = () => performance.now() } = this.options
      health = await this.healthToSend()
      const signed = boxKey ? keyAdoptionFor(boxKey, saved.serverId, clock.now()) : undefined
      const report: ReplayServerStatusQuery = {
        ...this.report(),
        ...signed,
        ...(health?.encoded ? { health: health.encoded } : {}),
        ...(boxKey && signed && health?.encoded ? { healthSignature: healthSignatureFor(boxKey, saved.serverId, signed.keyTimestamp, health.encoded) } : {}),
        // The server takes the clock offset from the signed keyTimestamp: unsigned, the round trip says nothing.
        ...(boxKey && this.roundTripMs !== undefined ? { roundTripMs: this.roundTripMs } : {})
      }
      const sentAt = monotonic()
      const result = await client.status(saved.serverId, report, this.etag)
      const roundTripMs = Math.min(Math.max(Math.round(monotonic() - sentAt), 0), 600_000)
      this.reached()
      const interval = (saved.pollInterval ?? DEFAULT_POLL_SECONDS) * 1000
      switch (result.kind) {
        case 'unknown-server':
          log.warn({ deviceId: identity.deviceId }, 'the server no longer knows this box: registering again')
          state.update((s) => ({ ...s, serverId: undefined }))
          this.etag = undefined
          return 0
        case 'rate-limited':
          return result.retryAfterSeconds * 1000
        case 'not-modified':
          this.delivered(health, roundTripMs)
          if (this.lastAnswer) await this.options.onUnchanged?.(this.lastAnswer)
          return this.nextDelay(interval)
        case 'status':
          this.delivered(health, roundTripMs)
          this.etag = result.etag
          this.lastAnswer = result.answer
          await this.accept(result.answer)
          return this.nextDelay(interval)
      }
    } catch (err) {
      this.connected = false
      this.failures += 1
      const delay = backoffDelay(this.failures, this.random)
      if (err instanceof RequestRefusedError) {
        // The server answered and said why (a registration with a stale clock, a proof already used):
        // an installer reading the log can act on it.
        this.connected = true
        // A report the server refuses would be refused again: counted as sent, so the next polls go
        // without it (and reach the server) until it changes or the heartbeat is due.
        if (health) this.healthSent = { report: health.report, at: (this.options.clock ?? systemClock).now() }
        log.warn({ err: err.message, attempt: this.failures, retryInMs: delay }, 'the server refused this request; recording goes on with the last approved configuration')
      } else {
        log.warn({ err: (err as Error).message, attempt: this.failures, retryInMs: delay }, 'server unreachable; recording goes on with the last approved configuration')
      }
      return delay
    }
  }

  private async register(): Promise<number> {
    const { client, state, identity, log } = this.options
    const result = await client.register(this.registration())
    this.reached()
    if (result.kind === 'rate-limited') return result.retryAfterSeconds * 1000
    const { serverId, pollInterval, status } = result.registration
    state.update((s) => ({ ...s, serverId, pollInterval }))
    this.etag = undefined
    // A new record knows nothing of this box's health: the first poll carries it.
    this.healthSent = undefined
    if (status === 'PENDING') {
      log.info(
        { deviceId: identity.deviceId, hostname: identity.hostname, status, keyFingerprint: this.options.boxKey?.fingerprint },
        'registered with the server: waiting for an admin (a new box, or one whose key the server does not know)'
      )
    } else log.info({ deviceId: identity.deviceId, hostname: identity.hostname, status }, 'registered with the server')
    return 0
  }

  private async accept(answer: ReplayServerStatusAnswer): Promise<void> {
    const { state, identity, log } = this.options
    const previous = this.status
    this.status = answer.status
    this.area = answer.status === 'APPROVED' ? (answer.area ?? null) : null
    this.replayRequests = answer.replayRequests ?? 0
    if (answer.status === 'APPROVED') {
      state.update((s) => ({ ...s, accessToken: answer.accessToken ?? s.accessToken, config: answer.config ?? s.config, doNotFilm: answer.doNotFilm }))
      if (previous !== 'APPROVED') log.info({ deviceId: identity.deviceId, area: answer.area?.id }, 'approved')
    } else {
      state.update((s) => ({ ...s, accessToken: undefined, config: undefined, doNotFilm: undefined }))
      if (previous !== answer.status) {
        const message = answer.status === 'PENDING' ? 'waiting for approval by an admin' : `the server answered ${answer.status}: not recording`
        log.info({ deviceId: identity.deviceId, hostname: identity.hostname, status: answer.status }, message)
      }
    }
    await this.options.onStatus(answer)
  }

  /** The report this poll carries, when healthToSend says it should; a report that cannot be made is logged and left out. */
  private async healthToSend(): Promise<{ report: BoxHealthReport; encoded: string | null } | undefined> {
    const { health, clock = systemClock, log } = this.options
    if (!health) return undefined
    let report: BoxHealthReport
    try {
      report = await health()
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'the health report could not be made; this poll goes without it')
      return undefined
    }
    if (!healthToSend(this.healthSent, report, clock.now())) return undefined
    const encoded = encodeHealth(report)
    if (encoded === null) log.warn({ cameras: report.cameras.length }, 'the health report does not fit in a poll, even without problems; sent without it')
    return { report, encoded }
  }

  /** The server answered the poll: its report counts as received, and its round trip goes with the next. */
  private delivered(health: { report: BoxHealthReport } | undefined, roundTripMs: number): void {
    this.roundTripMs = roundTripMs
    if (health) this.healthSent = { report: health.report, at: (this.options.clock ?? systemClock).now() }
  }

  private nextDelay(intervalMs: number): number {
    if (this.replayRequests > 0 && this.status === 'APPROVED') return jittered(Math.min(intervalMs, REPLAY_WAITING_POLL_MS), this.random)
    return this.status === 'REJECTED' || this.status === 'REVOKED' ? jittered(slowPollMs(intervalMs / 1000), this.random) : jittered(intervalMs, this.random)
  }

  private reached(): void {
    this.connected = true
    this.failures = 0
    this.lastContactAt = new Date()
  }

  /**
   * What registration takes: what identifies the box, with a fresh proof of its key (the
   * architecture and update go with polls only).
   */
  private registration(): ReplayServerRegistrationRequest {
    const { identity, displayName, boxKey, clock = systemClock } = this.options
    const { version, serverUrl, localIp } = this.report()
    const audience = this.options.client.origin
    const proof = boxKey ? keyProofFor(boxKey, { deviceId: identity.deviceId, serverUrl, audience }, clock.now()) : {}
    return { deviceId: identity.deviceId, hostname: identity.hostname, version, displayName, serverUrl, localIp, ...proof }
  }

  private report(): ReplayServerStatusQuery {
    const { identity, publicUrl } = this.options
    return {
      version: identity.version,
      ...(publicUrl ? { serverUrl: publicUrl } : {}),
      ...(identity.localIp ? { localIp: identity.localIp } : {}),
      ...(identity.architecture ? { architecture: identity.architecture } : {}),
      ...this.options.extraReport?.()
    }
  }
}
