// A second server process on a test's database file, for racing an "at most once" rule across processes.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** A second server process (`dist/main.js`, as `pnpm start` runs it) on the test's database file. */
export async function secondServer(t: { teardown(fn: () => unknown): void }, databaseUrl: string, settings: Record<string, string> = {}): Promise<string> {
  const main = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
  // SCHEDULER=external: its catch-up would run the CHARGE job at the real time, years past the test's clock.
  const env = { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', PASSWORD_HASH_COST: '1024', SCHEDULER: 'external', ...settings }
  const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void child.kill('SIGKILL'))
  let out = ''
  return new Promise((resolve, reject) => {
    const read = (d: Buffer) => {
      out += d
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match) resolve(match[1]!)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.on('exit', (code) => reject(new Error(`the second server exited (${code}) before listening: ${out}`)))
  })
}
