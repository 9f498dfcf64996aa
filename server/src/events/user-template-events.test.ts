// User and template events: a user created and erased, a template created, updated and deleted,
// with the GET answers as payloads (an erased user's carries nothing personal).
import t from 'tap'
import { runCli } from '../cli.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { eventReader } from './test-helpers.js'

t.test('a user created (the CLI too) and, once erased by the cleanup job, deleted without personal data', async (t) => {
  const ctx = await testApp(t, { USER_DELETION_GRACE_DAYS: '7' })
  const events = eventReader(ctx.app.db)
  const member = await userWithToken(ctx, 'member')
  const created = await events.next()
  t.same(created.map((e) => e.type), ['user.created'])
  const shown = (await ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { authorization: member.authorization } })).json()
  t.same(created[0]!.data, shown, 'the user as GET users/current answers it')
  t.notOk(JSON.stringify(created[0]!.data).includes('password'), 'no password hash')

  let errors = ''
  const code = await runCli(
    ['users', 'create', '--email', 'desk@example.org', '--password', 'a fine password', '--role', 'staff'],
    { DATABASE_URL: ctx.config.DATABASE_URL, PASSWORD_HASH_COST: '1024' },
    () => {},
    (line) => (errors += line)
  )
  t.equal(code, 0, errors)
  t.match((await events.next()).map((e) => [e.type, (e.data as { email: string }).email]), [['user.created', 'desk@example.org']], 'the CLI writes its event too')

  t.equal((await ctx.app.inject({ method: 'DELETE', url: '/apis/v2/users/current', headers: { authorization: member.authorization } })).statusCode, 202)
  t.same(await events.next(), [], 'a deletion asked for is not yet a deletion')
  ctx.clock.set('2026-03-09T10:00:00.000Z')
  const outcome = await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  t.equal(outcome.kind, 'ran')
  const deleted = await events.next()
  t.same(deleted.map((e) => [e.type, e.resource.id]), [['user.deleted', member.id]])
  t.match(deleted[0]!.data, { id: member.id, firstName: null, lastName: null })
  t.notOk(JSON.stringify(deleted[0]!.data).includes(member.email), 'the erased address is nowhere in it')
})

t.test('a template created, updated (a PATCH that changes nothing is no event), deleted', async (t) => {
  const ctx = await testApp(t)
  const staff = await userWithToken(ctx, 'staff')
  const events = eventReader(ctx.app.db)
  await events.next()
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: { authorization: staff.authorization }, ...(payload ? { payload } : {}) })
  const created = await call('POST', '/apis/v2/templates', { name: 'Open play', type: 'EVENT', data: {} })
  t.equal(created.statusCode, 201)
  const id = created.json().id as string
  const first = await events.next()
  t.same(first.map((e) => e.type), ['template.created'])
  t.same(first[0]!.data, (await call('GET', `/apis/v2/templates/${id}`)).json())
  const patched = await call('PATCH', `/apis/v2/templates/${id}`, { name: 'Open play (evenings)' })
  t.equal(patched.statusCode, 200)
  const updated = await events.next()
  t.same(updated.map((e) => e.type), ['template.updated'])
  t.same(updated[0]!.data, patched.json())
  await call('PATCH', `/apis/v2/templates/${id}`, { name: 'Open play (evenings)' })
  t.same(await events.next(), [], 'nothing changed, nothing told')
  t.equal((await call('DELETE', `/apis/v2/templates/${id}`)).statusCode, 204)
  const deleted = await events.next()
  t.same(deleted.map((e) => e.type), ['template.deleted'])
  t.same(deleted[0]!.data, patched.json(), 'the template as it was last shown')
})
