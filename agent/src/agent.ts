// The agent put together: the poller's answers drive the recorder, the cleanup job and updates;
// the local API reads from all of them. Every part is handed its dependencies here. Over 400 lines
// on purpose: it is the one place that starts and stops the parts in order, and each part's work is
// in its own module already; split, the order of start and stop would be spread over files.
import { mkdirSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { STATUS_CODES } from 'node:http'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openBucket, type Bucket } from '@club/storage'
import type { FastifyInstance } from 'fastify'
import type { AgentHealth, BoxHealthReport, Clip, ClipRequest, DeviceReplay, DoNotFilm, PendingUpdate, ReplayServerConfig, ReplayServerStatusAnswer } from '@club/contract'
import { LocalPassword } from './access/local-password.js'
import { SessionStore, SignInAttempts } from './access/sessions.js'
import { addressTowards, chooseHttpHost } from './bind-address.js'
import { systemClock, type Clock } from './clock.js'
import { Cleanup, freeDiskBytes, recordingsBytes } from './cleanup.js'
import { ClipError, ClipExporter } from './clips/export.js'
import { SegmentLeases } from './clips/leases.js'
import type { AgentConfig } from './config.js'
import { loadOrCreateBoxKey, type BoxKey } from './control/box-key.js'
import { ControlClient } from './control/client.js'
import { StatusPoller } from './control/poller.js'
import { StateStore } from './control/state.js'
import { Decoders } from './decoders.js'
import { diskSpace, Temperature } from './health/gather.js'
import { cameraHealth, diskHealth, recordingRate } from './health/report.js'
import { buildLocalApi, HttpError, type LocalAccess } from './http.js'
import type { Identity } from './identity.js'
import type { Logger } from './log.js'
import { camerasToRecord } from './recorder/do-not-film.js'
import { FootageTakedowns } from './recorder/takedowns.js'
import { snapshotArgs } from './recorder/pipeline.js'
import type { FfmpegRunner } from './recorder/runner.js'
import { listSegments } from './recorder/segments.js'
import { idleFacts, Recorder } from './recorder/supervisor.js'
import { ReplayClient } from './replays/client.js'
import { askAgainAfterSeconds } from './replays/plan.js'
import { ReplayWorker } from './replays/worker.js'
import { runUpdateCommand, Updater } from './update/updater.js'

/**
 * An export: an installer's clip goes to the configured bucket and holds what is on disk of its
 * interval; a replay's stays on the box for the replay worker and holds its whole interval or waits.
 */
type ExportRequest = ClipRequest & { keepLocal?: boolean; whole?: boolean }

export interface AgentOptions {
  config: AgentConfig
  identity: Identity
  runner: FfmpegRunner
  /** Runs a match's ffmpeg at the lowest priority; `runner` when absent. */
  backgroundRunner?: FfmpegRunner
  log: Logger
  clock?: Clock
}

/** The recordings' size is a walk over every segment: counted at most this often. */
const RECORDINGS_SIZE_MS = 10_000
/** For the health report, which is made with every poll (every 2 s while replays wait): at most this often. */
const RECORDINGS_SIZE_HEALTH_MS = 60_000

/**
 * The longest wait before deciding again which cameras record: a clock set back or forward (NTP after
 * a cold start) moves the next boundary, so it is looked at again at least this often.
 */
const FILMING_RECHECK_MS = 60_000

/** Sign-ins per client address per window: enough for an installer's typos, too few to guess. */
const SIGN_IN_ATTEMPTS = 10
const SIGN_IN_WINDOW_MS = 15 * 60_000

export class Agent {
  private readonly state: StateStore
  private readonly boxKey: BoxKey
  private readonly poller: StatusPoller
  private readonly recorder: Recorder
  private readonly cleanup: Cleanup
  private readonly exporter: ClipExporter
  private readonly decoders: Decoders<ExportRequest, Clip>
  private readonly access: LocalAccess
  private readonly replays: ReplayWorker
  private readonly takedowns: FootageTakedowns
  private readonly updater: Updater
  private polledOnce = false
  private replaysResumed = false
  /** The bucket clips go to, opened once per bucket URL and credentials file. */
  private bucket?: { key: string; opened: Promise<Bucket> }
  private readonly abort = new AbortController()
  private http?: FastifyInstance
  private polling?: Promise<void>
  private pendingUpdate: PendingUpdate | null = null
  private serverConfig: ReplayServerConfig | undefined
  /** The courts not to be filmed, and when, as the server last said. */
  private doNotFilm: DoNotFilm[] = []
  private paused: string[] = []
  private filmingTimer?: NodeJS.Timeout
  private readonly clock: Clock
  private recordingsSize?: { at: number; bytes: number | null }
  private readonly temperature: Temperature

  constructor(private readonly options: AgentOptions) {
    const { config, identity, runner, log } = options
    const clock = options.clock ?? systemClock
    this.clock = clock
    this.temperature = new Temperature({ clock })
    this.state = new StateStore(config.stateDir)
    mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
    this.boxKey = loadOrCreateBoxKey(config.stateDir)
    this.access = {
      password: new LocalPassword({ stateDir: config.stateDir, clock }),
      sessions: new SessionStore({ clock, ttlMs: config.sessionHours * 3_600_000 }),
      attempts: new SignInAttempts({ clock, maxAttempts: SIGN_IN_ATTEMPTS, windowMs: SIGN_IN_WINDOW_MS })
    }
    const leases = new SegmentLeases()
    this.recorder = new Recorder({ runner, recordingsDir: config.recordingsDir, segmentSeconds: config.segmentSeconds, log })
    this.cleanup = new Cleanup({
      recordingsDir: config.recordingsDir,
      clipsDir: config.clipsDir,
      retentionHours: config.retentionHours,
      minFreeDiskMb: config.minFreeDiskMb,
      schedule: config.cleanupSchedule,
      inUse: () => leases.paths(),
      log
    })
    this.exporter = new ClipExporter({
      runner,
      recordingsDir: config.recordingsDir,
      clipsDir: config.clipsDir,
      segmentSeconds: config.segmentSeconds,
      maxClipSeconds: config.maxClipSeconds,
      ...(options.backgroundRunner ? { backgroundRunner: options.backgroundRunner } : {}),
      filterThreads: availableParallelism(),
      leases,
      bucket: () => this.openBucket(),
      log,
      clock
    })
    this.decoders = new Decoders({
      limits: { maxDecoders: config.maxDecoders, maxExports: config.maxExports, maxQueuedExports: config.maxQueuedExports, snapshotReuseMs: 1000 },
      clock,
      takeSnapshot: (cameraId) => this.takeSnapshot(cameraId),
      runExport: (request) => this.runExport(request),
      describeError: (err) => {
        const statusCode = err instanceof ClipError || err instanceof HttpError ? err.statusCode : 500
        const message = statusCode === 500 ? 'the export failed' : (err as Error).message
        return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, retryAfterSeconds: askAgainAfterSeconds(err) }
      },
      log
    })
    const deviceClient = new ReplayClient({
      // The configuration's apiBaseUrl, else the server this box registered with.
      baseUrl: () => this.serverConfig?.apiBaseUrl ?? config.serverUrl,
      accessToken: () => this.state.load().accessToken,
      timeoutMs: config.requestTimeoutSeconds * 1000
    })
    this.takedowns = new FootageTakedowns({
      recordingsDir: config.recordingsDir,
      confirm: (id, deletedFiles) => deviceClient.confirmFootageDeletion(id, deletedFiles),
      log
    })
    this.replays = new ReplayWorker({
      client: deviceClient,
      cut: (replay) => (replay.kind === 'MATCH' ? this.cutMatch(replay) : this.cutReplay(replay)),
      bucket: () => this.openBucket(),
      stateDir: config.stateDir,
      uploadAttempts: config.uploadAttempts,
      flushSeconds: config.replayFlushSeconds,
      uploadMaxBytesPerSecond: () => this.serverConfig?.uploadMaxBytesPerSecond,
      log,
      signal: this.abort.signal
    })
    this.updater = new Updater({
      stateDir: config.stateDir,
      running: identity.version,
      baseUrl: () => this.serverConfig?.apiBaseUrl ?? config.serverUrl,
      accessToken: () => this.state.load().accessToken,
      releaseKeyPath: config.releaseKeyPath,
      // Waiting exports count: they would be cut by the restart as surely as the running one.
      exportsRunning: () => this.decoders.listJobs().filter((job) => job.state === 'running' || job.state === 'queued').length + this.replays.matchesBeingCut,
      trigger: (version) => runUpdateCommand(config.updateCommand, version, log),
      clock,
      log,
      timeoutMs: config.requestTimeoutSeconds * 1000
    })
    this.poller = new StatusPoller({
      extraReport: () => this.updater.report(),
      // An update waiting for the box to be idle is looked at again with every poll, changed or not.
      onUnchanged: (answer) => {
        if (answer.status === 'APPROVED' && answer.pendingUpdate) this.stepUpdate(answer.pendingUpdate)
        // A takedown whose confirmation did not reach the server is still in the answer: tried again.
        if (answer.status === 'APPROVED') this.stepTakedowns(answer)
      },
      client: new ControlClient({ baseUrl: config.serverUrl, timeoutMs: config.requestTimeoutSeconds * 1000 }),
      state: this.state,
      identity,
      boxKey: this.boxKey,
      clock,
      ...(config.displayName ? { displayName: config.displayName } : {}),
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      log,
      health: () => this.healthReport(),
      onStatus: (answer) => this.onStatus(answer)
    })
  }

  /** The local API's address once listening. */
  get address(): string | undefined {
    const address = this.http?.server.address()
    return address && typeof address === 'object' ? `http://${address.address}:${address.port}` : undefined
  }

  async start(): Promise<void> {
    const { config, log, identity } = this.options
    await Promise.all([config.stateDir, config.recordingsDir, config.clipsDir].map((d) => mkdir(d, { recursive: true })))
    this.updater.started()
    // The first reading in the background, so the first health report has it if the hardware answers soon.
    this.temperature.current()
    const saved = this.state.load()
    // The server may be away right now: go on recording with what it last approved.
    if (saved.config && saved.accessToken) {
      log.info({ cameras: saved.config.cameras.length }, 'resuming with the last approved configuration')
      this.poller.status = 'APPROVED'
      await this.applyConfig(saved.config, saved.doNotFilm ?? [])
    }
    this.http = await buildLocalApi(
      {
        live: () => ({ status: 'ok', recording: this.recorder.recording() }),
        health: () => this.health(),
        accessToken: () => this.state.load().accessToken,
        snapshot: (id) => this.snapshot(id),
        exportClip: (request) => this.exportClip(request),
        exportJob: (id) => this.decoders.job(id),
        exportJobs: () => this.decoders.listJobs(),
        replayRequests: () => {
          // The server's notice: the replays are fetched from it, so the notice itself carries nothing to trust.
          void this.replays.pickUp()
        }
      },
      this.access,
      log
    )
    const bind = chooseHttpHost(config.httpHost, config.httpHost ? undefined : await addressTowards(config.serverUrl))
    log.info({ httpHost: bind.host, reason: bind.reason }, 'local API address chosen')
    await this.http.listen({ port: config.httpPort, host: bind.host })
    log.info(
      { deviceId: identity.deviceId, keyFingerprint: this.boxKey.fingerprint, hostname: identity.hostname, version: identity.version, localApi: this.address },
      'agent started'
    )
    this.polling = this.poller.run(this.abort.signal)
  }

  /** Stops polling, then every camera gracefully (so each last segment is playable), then the API. */
  async stop(): Promise<void> {
    this.abort.abort()
    clearTimeout(this.filmingTimer)
    this.cleanup.stop()
    await this.polling
    await this.recorder.stopAll()
    await this.http?.close()
  }

  async health(): Promise<AgentHealth> {
    const { identity, config } = this.options
    const lastCleanup = this.cleanup.lastRun
    return {
      version: identity.version,
      deviceId: identity.deviceId,
      keyFingerprint: this.boxKey.fingerprint,
      hostname: identity.hostname,
      displayName: config.displayName ?? null,
      serverUrl: config.serverUrl,
      status: this.poller.status,
      area: this.poller.area,
      connected: this.poller.connected,
      lastContactAt: this.poller.lastContactAt?.toISOString() ?? null,
      pendingUpdate: this.pendingUpdate,
      cleanupEnabled: this.cleanup.enabled,
      freeDiskBytes: await freeDiskBytes(config.recordingsDir),
      disk: {
        recordingsBytes: this.recordingsBytes(),
        retentionHours: config.retentionHours,
        minFreeBytes: config.minFreeDiskMb * 1024 * 1024,
        lastCleanupAt: lastCleanup?.at.toISOString() ?? null,
        lastCleanupDeleted: lastCleanup?.deleted ?? null
      },
      cameras: this.recorder.status()
    }
  }

  /**
   * What the box reports of its health with its polls: each configured camera's state from the
   * recorder's own facts (the ones the local page shows), the disk, and the agent itself.
   */
  async healthReport(): Promise<BoxHealthReport> {
    const { config } = this.options
    // The supervisor times its runs and restarts by the system's clock: so is this.
    const now = Date.now()
    const facts = this.recorder.facts(now)
    let bytesPerHour = 0
    const cameras = (this.serverConfig?.cameras ?? []).map((camera) => {
      const cameraFacts = facts.get(camera.id) ?? idleFacts(join(config.recordingsDir, camera.id))
      const report = cameraHealth(camera, this.paused.includes(camera.id), cameraFacts, now)
      if (report.state === 'RECORDING') bytesPerHour += recordingRate(cameraFacts)
      return report
    })
    const space = (await diskSpace(config.recordingsDir)) ?? { freeBytes: 0, totalBytes: 0 }
    return {
      cameras,
      disk: diskHealth(space, this.recordingsBytes(RECORDINGS_SIZE_HEALTH_MS) ?? 0, bytesPerHour),
      temperatureCelsius: this.temperature.current(),
      memoryBytes: process.memoryUsage().rss,
      uptimeSeconds: Math.floor(process.uptime())
    }
  }

  /** The segments' total size, counted again when the last count is older than `maxAgeMs`. */
  private recordingsBytes(maxAgeMs = RECORDINGS_SIZE_MS): number | null {
    const now = Date.now()
    if (!this.recordingsSize || now - this.recordingsSize.at > maxAgeMs) {
      let bytes: number | null
      try {
        bytes = recordingsBytes(this.options.config.recordingsDir)
      } catch {
        bytes = null
      }
      this.recordingsSize = { at: now, bytes }
    }
    return this.recordingsSize.bytes
  }

  private async onStatus(answer: ReplayServerStatusAnswer): Promise<void> {
    this.pendingUpdate = answer.pendingUpdate ? { version: answer.pendingUpdate.version } : null
    if (!this.polledOnce) {
      // The installer waits for this word that the new version reached the server.
      this.polledOnce = true
      this.updater.polled()
    }
    if (answer.status === 'APPROVED') {
      if (answer.config) await this.applyConfig(answer.config, answer.doNotFilm ?? [])
      this.stepUpdate(answer.pendingUpdate)
      this.stepTakedowns(answer)
      // Also on the first answer after a start: replays this box began before it restarted are no longer
      // counted as waiting (REQUESTED) but still listed for it (EXPORTING, UPLOADING).
      if (answer.replayRequests || !this.replaysResumed) {
        this.replaysResumed = true
        void this.replays.pickUp()
      }
    } else {
      this.serverConfig = undefined
      clearTimeout(this.filmingTimer)
      this.cleanup.setEnabled(false)
      await this.recorder.stopAll()
    }
  }

  /** In the background: a download may take minutes, the polls go on meanwhile. */
  private stepUpdate(pending: PendingUpdate | undefined): void {
    void this.updater.onPending(pending).catch((err: unknown) => this.options.log.error({ err: (err as Error).message }, 'update step failed'))
  }

  /** In the background, like an update: deleting and confirming must not hold the polls. */
  private stepTakedowns(answer: ReplayServerStatusAnswer): void {
    const cameras = this.serverConfig?.cameras
    if (!answer.footageTakedowns || !cameras) return
    void this.takedowns
      .apply(answer.footageTakedowns, cameras)
      .catch((err: unknown) => this.options.log.warn({ err: (err as Error).message }, 'footage takedown not confirmed yet; tried again with the next poll'))
  }

  private async applyConfig(config: ReplayServerConfig, doNotFilm: DoNotFilm[]): Promise<void> {
    this.serverConfig = config
    this.doNotFilm = doNotFilm
    this.cleanup.setEnabled(config.cleanupEnabled)
    await this.applyFilming()
  }

  /**
   * Records the cameras camerasToRecord says record now, and comes back at its next boundary (a
   * "do not film" interval starting or ending), whether or not the server is reachable then.
   */
  private async applyFilming(): Promise<void> {
    clearTimeout(this.filmingTimer)
    const config = this.serverConfig
    if (!config || this.abort.signal.aborted) return
    const now = this.clock.now()
    const plan = camerasToRecord(config.cameras, this.doNotFilm, now)
    if (plan.paused.join() !== this.paused.join()) {
      this.options.log.info({ paused: plan.paused, until: plan.nextChangeAt?.toISOString() ?? null }, 'cameras held off for "do not film" intervals changed')
      this.paused = plan.paused
    }
    await this.recorder.apply(plan.cameras)
    if (plan.nextChangeAt === null) return
    const wait = Math.min(Math.max(plan.nextChangeAt.getTime() - now.getTime(), 0), FILMING_RECHECK_MS)
    this.filmingTimer = setTimeout(() => {
      this.applyFilming().catch((err: unknown) => this.options.log.error({ err: (err as Error).message }, 'applying "do not film" intervals failed'))
    }, wait)
    this.filmingTimer.unref()
  }

  /** The checks that need no process, then a picture through the decoders' gate. */
  private async snapshot(cameraId: string): Promise<Buffer> {
    if (!this.recorder.camera(cameraId)) throw new HttpError(404, `there is no camera ${cameraId}`)
    const problem = this.recorder.correctionError(cameraId)
    if (problem) throw new HttpError(422, problem)
    return this.decoders.snapshot(cameraId)
  }

  private async takeSnapshot(cameraId: string): Promise<Buffer> {
    const camera = this.recorder.camera(cameraId)
    if (!camera) throw new HttpError(404, `there is no camera ${cameraId}`)
    const dir = await mkdtemp(join(tmpdir(), 'club-agent-snapshot-'))
    try {
      const outputPath = join(dir, 'snapshot.jpg')
      const segments = listSegments(join(this.options.config.recordingsDir, cameraId)).filter((s) => s.size > 0)
      // The newest segment may hold no complete fragment yet; the one before always does.
      for (const segment of segments.slice(-2).reverse()) {
        try {
          await this.options.runner.run(snapshotArgs(camera, segment.path, outputPath), 30_000)
          return await readFile(outputPath)
        } catch {
          continue
        }
      }
      throw new HttpError(404, `no recorded frame of camera ${cameraId} yet`)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  /**
   * Cuts a replay's whole interval with the box's clip export, kept in the clips folder (no bucket
   * here: the replay worker uploads it, with retries, and reports each step). It takes its turn among
   * the local API's exports, so replays and installers' clips together never run more decoders than
   * the box allows. A full queue (429) or footage still being written (503) is the worker's to wait for.
   */
  private async cutReplay(replay: { cameraId: string; start: string; end: string }): Promise<{ path: string; duration: number }> {
    if (!this.serverConfig) throw new HttpError(422, 'this box has no approved configuration')
    const clip = await this.decoders.submitExport({ cameraId: replay.cameraId, start: replay.start, end: replay.end, keepLocal: true, whole: true }).finished
    return { path: fileURLToPath(clip.location), duration: clip.duration }
  }

  /**
   * Cuts a match (a camera's whole booking) with the box's export, in the match lane: not through the
   * local API's export queue, where its hours would hold every player's replay behind it. The export
   * runs its ffmpeg at the lowest priority and writes the match's chapters.
   */
  private async cutMatch(replay: DeviceReplay): Promise<{ path: string; duration: number }> {
    const config = this.serverConfig
    if (!config) throw new HttpError(422, 'this box has no approved configuration')
    const clip = await this.exporter.export(
      { cameraId: replay.cameraId, start: new Date(replay.start), end: new Date(replay.end), whole: true, match: { chapters: replay.chapters ?? [] } },
      this.recorder.camera(replay.cameraId),
      { ...config, cloudStorageBucket: undefined },
      this.recorder.correctionError(replay.cameraId)
    )
    return { path: fileURLToPath(clip.location), duration: clip.duration }
  }

  private openBucket(): Promise<Bucket> {
    const config = this.serverConfig
    if (!config?.cloudStorageBucket) return Promise.reject(new Error('no cloudStorageBucket is configured'))
    const key = `${config.cloudStorageBucket}\n${config.cloudCredentialsPath ?? ''}`
    if (this.bucket?.key !== key) {
      const opened = openBucket(config.cloudStorageBucket, config.cloudCredentialsPath ? { credentialsPath: config.cloudCredentialsPath } : {})
      // An unreadable credentials file is read again on the next attempt.
      opened.catch(() => {
        if (this.bucket?.opened === opened) this.bucket = undefined
      })
      this.bucket = { key, opened }
    }
    return this.bucket.opened
  }

  /** Refuses at once what can be refused without footage; queues the rest behind the running exports. */
  private exportClip(request: ClipRequest) {
    if (!this.serverConfig) throw new HttpError(404, 'this box has no approved configuration')
    try {
      this.exporter.check(
        { cameraId: request.cameraId, start: new Date(request.start), end: new Date(request.end) },
        this.recorder.camera(request.cameraId),
        this.recorder.correctionError(request.cameraId)
      )
    } catch (err) {
      if (err instanceof ClipError) throw clipHttpError(err)
      throw err
    }
    return this.decoders.submitExport(request)
  }

  private async runExport(request: ExportRequest): Promise<Clip> {
    const config = this.serverConfig
    if (!config) throw new HttpError(404, 'this box has no approved configuration')
    try {
      return await this.exporter.export(
        { cameraId: request.cameraId, start: new Date(request.start), end: new Date(request.end), whole: request.whole === true },
        this.recorder.camera(request.cameraId),
        request.keepLocal ? { ...config, cloudStorageBucket: undefined } : config,
        this.recorder.correctionError(request.cameraId)
      )
    } catch (err) {
      if (err instanceof ClipError) throw clipHttpError(err)
      throw err
    }
  }
}

/** A refused export as the local API answers it; a 503 says when to ask again. */
export function clipHttpError(err: ClipError): HttpError {
  return new HttpError(err.statusCode, err.message, err.retryAfterSeconds === undefined ? {} : { 'retry-after': String(err.retryAfterSeconds) })
}
