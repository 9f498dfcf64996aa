// A throwaway redis-server (Debian's redis-server package, which `pnpm test` bootstraps) on a unix
// socket in a fresh temporary folder: no port to race for, nothing kept on disk, stopped in teardown.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestRedis {
  /** REDIS_URL for the app: the socket's path. */
  url: string
  /** Kills the server at once, as a crash or a lost host would. */
  kill(): Promise<void>
  /** Starts it again on the same socket, empty, and resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops the process (SIGSTOP): connections stay open and nothing answers, as a hung server. */
  pause(): void
  /** Lets a paused server go on (SIGCONT). */
  resume(): void
}

export async function redisServer(t: { teardown(fn: () => unknown): void }): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'club-redis-'))
  const socket = join(dir, 'redis.sock')
  let child: ChildProcess | undefined

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const args = ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, '--save', '', '--appendonly', 'no']
      const server = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
      child = server
      // A test process that dies (tap's timeout) before its teardown takes its Redis with it.
      const orphaned = () => void server.kill('SIGKILL')
      process.once('exit', orphaned)
      server.once('exit', () => process.off('exit', orphaned))
      let out = ''
      const read = (data: Buffer) => {
        out += data
        if (/ready to accept connections/i.test(out)) resolve()
      }
      server.stdout!.on('data', read)
      server.stderr!.on('data', read)
      server.on('error', (err: NodeJS.ErrnoException) =>
        reject(err.code === 'ENOENT' ? new Error('redis-server is not installed: run `node scripts/bootstrap.mjs` (apt: redis-server)') : err)
      )
      server.on('exit', (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}) before it was ready: ${out}`)))
    })

  const kill = async () => {
    const server = child
    child = undefined
    if (!server || server.exitCode !== null || server.signalCode !== null) return
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGKILL')
    await exited
  }

  t.teardown(async () => {
    await kill()
    rmSync(dir, { recursive: true, force: true })
  })
  await start()
  return { url: socket, kill, start, pause: () => void child?.kill('SIGSTOP'), resume: () => void child?.kill('SIGCONT') }
}
