// The receiver example of docs/integrating.md, run as an integrator would: its JavaScript read from
// that page's Events section, started with node beside its one dependency (standardwebhooks), and
// sent a real event by a real server. It must print the event once, answer 204, and refuse a forged
// delivery.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import { caller, issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { testApp, userWithToken } from '../test-support/app.js'

const require = createRequire(import.meta.url)

/** A port nothing listens on now: the system's pick for a server closed at once. */
async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

function documentedReceiver(): string {
  const page = readFileSync(new URL('../../../docs/integrating.md', import.meta.url), 'utf8')
  const start = page.indexOf('\n## Events')
  const section = page.slice(start, page.indexOf('\n## ', start + 1))
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1]
  if (start < 0 || !code) throw new Error('docs/integrating.md has no receiver example in its Events section')
  return code
}

t.test("the documented receiver verifies and takes a real delivery, once, and refuses a forged one", async (t) => {
  const ctx = await testApp(t, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
  // The package checks webhook-timestamp against the real clock: the server's clock is the real one here.
  ctx.clock.set(new Date())
  const dir = mkdtempSync(join(tmpdir(), 'club-receiver-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(dirname(require.resolve('standardwebhooks/package.json')), join(dir, 'node_modules', 'standardwebhooks'))
  writeFileSync(join(dir, 'receiver.mjs'), documentedReceiver())

  const admin = await userWithToken(ctx, 'admin')
  const call = caller(ctx)
  // The endpoint first (its URL needs the port), then the receiver with its secret on that port.
  const port = await freePort()
  const endpoint = (await call('POST', '/apis/v2/admin/webhook-endpoints', admin, { url: `http://127.0.0.1:${port}/`, eventTypes: ['package.issued'] })).json()
  const child = spawn(process.execPath, ['receiver.mjs'], { cwd: dir, env: { ...process.env, CLUB_WEBHOOK_SECRET: endpoint.secret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void child.kill())
  let out = ''
  const waiters = new Set<() => void>()
  child.stdout.on('data', (d) => {
    out += d
    for (const wake of waiters) wake()
  })
  child.stderr.on('data', (d) => (out += d))
  const printed = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(out)) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve()
      }
      const timer = setTimeout(() => reject(new Error(`the receiver did not print ${pattern} within 20 s: ${out}`)), 20_000)
      waiters.add(check)
      check()
    })
  await printed(new RegExp(`listening on ${port}`))

  ctx.app.webhookDelivery.start()
  const staff = await userWithToken(ctx, 'staff')
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), admin.id)
  await printed(new RegExp(`package\\.issued ${pkg.id} at `))
  await ctx.app.webhookDelivery.idle()
  const deliveries = (await call('GET', `/apis/v2/admin/webhook-endpoints/${endpoint.id}/deliveries`, admin)).json()
  t.match(deliveries.items, [{ status: 'SUCCEEDED', responseStatus: 204 }])

  // Sent again (an admin's retry): same webhook-id, answered, not processed twice.
  await call('POST', `/apis/v2/admin/webhook-endpoints/${endpoint.id}/deliveries/${deliveries.items[0].id}/retry`, admin)
  await ctx.app.webhookDelivery.idle()
  t.match((await call('GET', `/apis/v2/admin/webhook-endpoints/${endpoint.id}/deliveries`, admin)).json().items[0].attempts, [{ responseStatus: 204 }, { responseStatus: 204 }])
  t.equal(out.match(/package\.issued/g)?.length, 1, 'printed once')

  const forged = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'webhook-id': 'evt_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA', 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'package.issued', timestamp: new Date().toISOString(), data: { id: 'x' } })
  })
  t.equal(forged.status, 401, 'a forged delivery is refused')
})
