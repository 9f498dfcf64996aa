// The only file that knows how ffmpeg processes are spawned. It wraps fluent-ffmpeg (archived
// upstream, and its kill() defaults to SIGKILL, which leaves an MP4 without its index) behind a small
// interface, so a plain child_process.spawn can replace it without touching anything else.
import { execFile } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import ffmpeg from 'fluent-ffmpeg'

const execFileAsync = promisify(execFile)

export interface FfmpegExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** The last lines ffmpeg wrote to stderr. */
  stderr: string
}

export interface FfmpegProcess {
  readonly pid: Promise<number | undefined>
  readonly exited: Promise<FfmpegExit>
  /** `q` on stdin, then SIGTERM, then SIGKILL, each after a timeout: never SIGKILL first. */
  stop(): Promise<FfmpegExit>
}

export interface ProbeResult {
  duration?: number
  streams: Array<{
    codec_type?: string
    codec_name?: string
    profile?: string
    level?: number
    pix_fmt?: string
    time_base?: string
    width?: number
    height?: number
    r_frame_rate?: string
    duration?: string
  }>
}

export class FfmpegError extends Error {
  override name = 'FfmpegError'
}

export interface FfmpegRunnerOptions {
  ffmpegPath: string
  ffprobePath: string
  /** How long each stop step waits before escalating. */
  stopStepMs?: number
  /**
   * Runs every ffmpeg at the lowest priority: under `nice -n 19`, and in the idle I/O class (ionice -c 3)
   * where ionice exists. A match's re-encode so leaves the cores and the disk to the recordings and to
   * a player's replay. ffprobe is left alone (it is short).
   */
  lowestPriority?: boolean
}

/** Splits a flat ffmpeg argument list into fluent-ffmpeg's inputs (options + source) and output. */
export function splitArgs(args: readonly string[]): { inputs: Array<{ options: string[]; source: string }>; outputOptions: string[]; target: string } {
  const inputs: Array<{ options: string[]; source: string }> = []
  let pending: string[] = []
  let i = 0
  for (; i < args.length; i++) {
    if (args[i] === '-i') {
      inputs.push({ options: pending, source: args[i + 1]! })
      pending = []
      i++
    } else if (inputs.length === 0 || args.indexOf('-i', i) !== -1) {
      pending.push(args[i]!)
    } else break
  }
  const rest = [...pending, ...args.slice(i)]
  return { inputs, outputOptions: rest.slice(0, -1), target: rest[rest.length - 1]! }
}

export class FfmpegRunner {
  private readonly stopStepMs: number

  constructor(private readonly options: FfmpegRunnerOptions) {
    this.stopStepMs = options.stopStepMs ?? 5_000
  }

  // Options go to fluent-ffmpeg as separate arguments: given one array, it would split every
  // element on its first space and break a filtergraph or a path with spaces in two.
  start(args: readonly string[]): FfmpegProcess {
    const { inputs, outputOptions, target } = splitArgs(args)
    // niceness: fluent-ffmpeg spawns `nice -n 19 ffmpeg ...`, so every thread ffmpeg makes is nice from the start.
    const command = ffmpeg({ stdoutLines: 20, ...(this.options.lowestPriority ? { niceness: 19 } : {}) }).setFfmpegPath(this.options.ffmpegPath)
    for (const input of inputs) {
      command.input(input.source)
      if (input.options.length) command.inputOptions(...input.options)
    }
    command.output(target)
    if (outputOptions.length) command.outputOptions(...outputOptions)

    let signal: NodeJS.Signals | null = null
    let code: number | null = null
    let resolvePid!: (pid: number | undefined) => void
    const pid = new Promise<number | undefined>((r) => (resolvePid = r))
    const exited = new Promise<FfmpegExit>((resolve) => {
      command.on('start', () => {
        const proc = (command as unknown as { ffmpegProc: import('node:child_process').ChildProcess }).ffmpegProc
        proc.stdin?.on('error', () => {})
        proc.on('exit', (c, s) => {
          code = c
          signal = s
        })
        resolvePid(proc.pid)
        // Best effort: a box without ionice (or a kernel without CFQ/BFQ classes) still has the nice.
        if (this.options.lowestPriority && proc.pid !== undefined) execFile('ionice', ['-c', '3', '-p', String(proc.pid)], () => {})
      })
      command.on('end', (_stdout: string | null, stderr: string | null) => resolve({ code: code ?? 0, signal, stderr: stderr ?? '' }))
      command.on('error', (err: Error, _stdout: string | null, stderr: string | null) => {
        resolvePid(undefined)
        resolve({ code, signal, stderr: stderr || err.message })
      })
    })
    command.run()

    const stopStepMs = this.stopStepMs
    const exitedWithin = (ms: number) => Promise.race([exited.then(() => true), sleep(ms).then(() => false)])
    return {
      pid,
      exited,
      async stop() {
        const started = await Promise.race([pid.then(() => true), exited.then(() => false)])
        if (!started) return exited
        const proc = (command as unknown as { ffmpegProc?: import('node:child_process').ChildProcess }).ffmpegProc
        if (proc && proc.exitCode === null && proc.signalCode === null) {
          proc.stdin?.write('q')
          proc.stdin?.end()
          if (!(await exitedWithin(stopStepMs))) {
            command.kill('SIGTERM')
            if (!(await exitedWithin(stopStepMs))) command.kill('SIGKILL')
          }
        }
        return exited
      }
    }
  }

  /** Runs ffmpeg to completion; rejects with its last stderr lines when it fails or overruns. */
  async run(args: readonly string[], timeoutMs = 120_000): Promise<FfmpegExit> {
    const proc = this.start(args)
    // A job that never ends (a filtergraph waiting on itself) must not hold a request open forever.
    const timer = setTimeout(() => void proc.stop(), timeoutMs)
    const exit = await proc.exited.finally(() => clearTimeout(timer))
    if (exit.code !== 0 || exit.signal) throw new FfmpegError(`ffmpeg failed: ${lastLines(exit.stderr)}`)
    return exit
  }

  async probe(path: string): Promise<ProbeResult> {
    const { stdout } = await execFileAsync(this.options.ffprobePath, ['-v', 'error', '-of', 'json', '-show_format', '-show_streams', path])
    const parsed = JSON.parse(stdout) as { format?: { duration?: string }; streams?: ProbeResult['streams'] }
    const duration = Number(parsed.format?.duration)
    return { duration: Number.isFinite(duration) ? duration : undefined, streams: parsed.streams ?? [] }
  }

  /**
   * The ffprobe lines (`pts_time,duration_time`) of a file's video packets, as far as they can be read:
   * '' when none can (a segment just opened holds no index yet, and ffprobe refuses it).
   */
  async videoPackets(path: string): Promise<string> {
    return this.probeVideoPackets(path, ['-show_entries', 'packet=pts_time,duration_time', '-of', 'csv=p=0'])
  }

  /** ffprobe's JSON of a file's video packets (times, flags) and its start time: where its keyframes are. */
  async videoPacketFlags(path: string): Promise<string> {
    return this.probeVideoPackets(path, ['-show_entries', 'packet=pts_time,dts_time,flags:format=start_time', '-of', 'json'])
  }

  private async probeVideoPackets(path: string, show: readonly string[]): Promise<string> {
    const args = ['-v', 'error', '-select_streams', 'v:0', ...show, path]
    try {
      return (await execFileAsync(this.options.ffprobePath, args, { maxBuffer: 64 << 20 })).stdout
    } catch (err) {
      // ffprobe gives up where a fragment is cut short, after printing the packets before it.
      const stdout = (err as { stdout?: unknown }).stdout
      return typeof stdout === 'string' ? stdout : ''
    }
  }

  /** Whether both binaries can be run; the reason when not. */
  async check(): Promise<string | undefined> {
    for (const bin of [this.options.ffmpegPath, this.options.ffprobePath]) {
      try {
        await execFileAsync(bin, ['-version'])
      } catch (err) {
        return `${bin} cannot be run (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): install it with "sudo apt-get install ffmpeg"`
      }
    }
    return undefined
  }
}

export function lastLines(text: string, count = 5): string {
  return text.trim().split('\n').slice(-count).join(' | ')
}
