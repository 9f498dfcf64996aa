// The typed-client example of docs/integrating.md, run as an integrator would: openapi-typescript's
// CLI on the running server's /documentation/json, the page's TypeScript checked by tsc against those
// types and run with openapi-fetch against the same server. The example is read from the page, so the
// two cannot drift apart.
import { execFile } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { testApp, userWithToken } from '../test-support/app.js'

const run = promisify(execFile)
// Three child processes, one of them tsc: over two minutes on a loaded 2-core machine. The bounds are
// for a CLI that hangs, not for a slow one.
t.setTimeout(600_000)
const require = createRequire(import.meta.url)
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`))

/** The integrators' section of docs/integrating.md: its `npx openapi-typescript …` line and its TypeScript block. */
function documentedExample(): { generate: string[]; client: string } {
  const page = readFileSync(new URL('../../../docs/integrating.md', import.meta.url), 'utf8')
  const start = page.indexOf('## Integrators')
  const section = page.slice(start, page.indexOf('\n## ', start + 1))
  const generate = /^npx openapi-typescript (.+)$/m.exec(section)?.[1]?.split(/\s+/)
  const client = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  if (start < 0 || !generate || !client) throw new Error('docs/integrating.md has no integrator example')
  return { generate, client }
}

t.test("the documented typed client works against a running server", async (t) => {
  const ctx = await testApp(t)
  const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const staff = await userWithToken(ctx, 'staff')
  const created = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/templates',
    headers: { authorization: staff.authorization },
    payload: { name: 'Doubles clinic', type: 'EVENT', data: {} }
  })
  t.equal(created.statusCode, 201)

  const dir = mkdtempSync(join(tmpdir(), 'club-client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // An integrator's project: openapi-fetch and Node's types installed, nothing of ours.
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true })
  symlinkSync(packageDir('openapi-fetch'), join(dir, 'node_modules', 'openapi-fetch'))
  symlinkSync(dirname(require.resolve('@types/node/package.json', { paths: [packageDir('typescript')] })), join(dir, 'node_modules', '@types', 'node'))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, types: ['node'] } })
  )

  const example = documentedExample()
  const generate = example.generate.map((arg) => arg.replace('http://localhost:3000', base))
  await run(process.execPath, [join(packageDir('openapi-typescript'), 'bin', 'cli.js'), ...generate], { cwd: dir, timeout: 300_000 })
  const types = readFileSync(join(dir, 'club-api.d.ts'), 'utf8')
  t.match(types, /listTemplates: \{/, 'the types name the operations by their operationId')

  writeFileSync(join(dir, 'templates.ts'), example.client)
  const tsc = join(packageDir('typescript'), 'bin', 'tsc')
  const checked = await run(process.execPath, [tsc, '-p', '.'], { cwd: dir, timeout: 300_000 }).catch((err: { stdout: string }) => err)
  t.equal(checked.stdout, '', 'the example typechecks against the generated types')

  const { stdout } = await run(process.execPath, ['templates.js'], {
    cwd: dir,
    timeout: 120_000,
    env: { ...process.env, CLUB_API_URL: base, CLUB_ACCESS_TOKEN: staff.accessToken }
  })
  t.equal(stdout, '1 templates\nDoubles clinic version 1 ETag "1"\n')
})
