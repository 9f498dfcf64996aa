import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url))

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [main], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
      if (match) resolve(match[1]!)
    })
    void exited.then(() => reject(new Error(`exited before listening: ${stderr}`)))
  })
  listening.catch(() => {}) // a test that expects an early exit never awaits it
  return { child, listening, exited, output: () => ({ stdout, stderr }) }
}

t.test('starts on a fresh data folder, serves the OpenAPI document, and stops cleanly on SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-main-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const database = join(dir, 'data', 'club.db')
  const server = start({ PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database })
  const base = await server.listening
  t.ok(existsSync(database), 'the database is created and migrated on first start')
  const doc = (await (await fetch(`${base}/documentation/json`)).json()) as { openapi: string; paths: Record<string, any> }
  t.equal(doc.openapi, '3.0.3')
  t.ok(doc.paths['/apis/v2/oauth2/token'].post)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.match(server.output().stdout, /shutting down/)
})

t.test('a bad setting stops the start with one line naming it', async (t) => {
  const server = start({ PORT: 'abc' })
  t.equal(await server.exited, 1)
  t.equal(server.output().stderr, 'club server: PORT="abc" is not valid: expected a whole number >= 0 and <= 65535\n')
})
