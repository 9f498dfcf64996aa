// What an operator sees first: readable log lines at a terminal, and how to make the first admin.
import { PassThrough } from 'node:stream'
import t from 'tap'
import { buildApp } from './app.js'
import { consoleStream, createLogger } from './logging.js'
import { testApp, userWithToken } from './test-support/app.js'

t.test('an empty database logs one line on how to create the first admin; a database with users does not', async (t) => {
  const ctx = await testApp(t)
  const hints = ctx.logs().split('\n').filter((line) => line.includes('club users create'))
  t.equal(hints.length, 1)
  t.match(hints[0], /pnpm -s club users create --email .+ --role admin/)

  await userWithToken(ctx, 'admin')
  let captured = ''
  const again = await buildApp({
    config: ctx.config,
    db: ctx.app.db,
    logStream: { write: (line: string) => void (captured += line) }
  })
  t.teardown(() => again.close())
  t.notMatch(captured, /club users create/)
})

t.test('at a terminal the log is readable lines, elsewhere JSON, and secrets are redacted in both', async (t) => {
  t.equal(await consoleStream(false), undefined, 'not a terminal: pino writes JSON to stdout')
  const out = new PassThrough()
  let text = ''
  out.on('data', (chunk: Buffer) => (text += chunk.toString()))
  const log = createLogger('info', await consoleStream(true, out))
  log.info({ password: 'hunter2hunter2', port: 3000 }, 'listening')
  t.match(text, /INFO.*listening/)
  t.throws(() => JSON.parse(text.split('\n')[0]!), 'a readable line, not JSON')
  t.notMatch(text, /hunter2/)
})
