// The users/cleanup job: each purge deletes what expired or outlived RETENTION_DAYS and leaves what is
// still valid, in batches; an account is erased after its grace period and not before, its orders'
// amounts kept.
import { sql } from 'kysely'
import t from 'tap'
import { createApiKey } from '../api-keys/service.js'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { createClient } from '../oauth2/clients.js'
import { testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'

const DAY = 86_400_000

async function cleanup(ctx: TestApp) {
  const outcome = await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  if (outcome.kind !== 'ran') throw new Error(`not run: ${outcome.kind}`)
  return outcome.run.counts
}

t.test('each purge leaves what is still valid', async (t) => {
  const ctx = await testApp(t, { RETENTION_DAYS: '90' })
  const { db } = ctx.app
  const user = await userWithToken(ctx)
  const now = ctx.clock.now().getTime()
  const at = (offsetMs: number) => new Date(now + offsetMs).toISOString()
  const { clientId } = await createClient(db, { name: 'App', redirectUris: ['https://app.example.org/cb'] }, ctx.clock)
  const code = (id: string, expires: string, used: string | null) =>
    db.insertInto('authorization_codes').values({ id, code_hash: id, client_id: clientId, user_id: user.id, redirect_uri: 'https://app.example.org/cb', scope: 'api', code_challenge: null, code_challenge_method: null, expires_at: expires, used_at: used, family_id: null, created_at: at(-DAY) }).execute()
  await code('code-expired', at(-1000), null)
  await code('code-used-live', at(60_000), at(-1000))
  await code('code-live', at(60_000), null)
  await db.insertInto('forum_connect_nonces').values([{ nonce_hash: 'n-old', user_id: user.id, expires_at: at(-1) }, { nonce_hash: 'n-live', user_id: user.id, expires_at: at(600_000) }]).execute()
  const reset = (id: string, expires: string, used: string | null) => ({ id, user_id: user.id, token_hash: id, expires_at: expires, used_at: used, created_at: at(-DAY) })
  await db.insertInto('password_reset_tokens').values([reset('r-expired', at(-1), null), reset('r-used', at(600_000), at(-1000)), reset('r-live', at(600_000), null)]).execute()
  const phone = (id: string, expires: string) => ({ id, provider: 'log' as const, phone_number: '+34600000000', provider_ref: null, code_hash: null, status: 'pending' as const, remaining_attempts: 5, expires_at: expires, created_at: at(-DAY), updated_at: at(-DAY) })
  await db.insertInto('phone_verifications').values([phone('p-expired', at(-1)), phone('p-live', at(600_000))]).execute()
  await db.insertInto('phone_verification_sends').values([{ id: 's-old', phone_number: '+34600000000', client_ip: '127.0.0.1', created_at: at(-2 * DAY) }, { id: 's-recent', phone_number: '+34600000000', client_ip: '127.0.0.1', created_at: at(-3_600_000) }]).execute()
  // Tokens: 1,200 expired for over a day (three batches), one expired an hour ago, and the user's own.
  const token = (id: string, expires: string) => ({ id, kind: 'access' as const, token_hash: id, user_id: user.id, client_id: null, scope: 'api', family_id: id, expires_at: expires, revoked_at: null, used_at: null, created_at: at(-3 * DAY), access_ttl_seconds: null, refresh_ttl_seconds: null })
  for (let i = 0; i < 1200; i += 300) {
    await db.insertInto('tokens').values(Array.from({ length: 300 }, (_, j) => token(`old-${i + j}`, at(-2 * DAY)))).execute()
  }
  await db.insertInto('tokens').values(token('recently-expired', at(-3_600_000))).execute()
  const mail = (id: string, created: string) => ({ id, kind: 'test', recipient: 'a@example.org', subject: 's', status: 'sent' as const, error: null, created_at: created, sent_at: created })
  await db.insertInto('mail_outbox').values([mail('m-old', at(-91 * DAY)), mail('m-kept', at(-89 * DAY))]).execute()
  const run = (id: string, started: string) => ({ id, job: 'reminder', trigger: 'schedule' as const, delivery: null, date: started, started_at: started, finished_at: started, status: 'succeeded' as const, counts: '{}', note: null, error: null })
  await db.insertInto('job_runs').values([run('j-old', at(-91 * DAY)), run('j-kept', at(-89 * DAY))]).execute()
  const delivery = (key: string, created: string) => ({ job: 'reminder', key, trigger: 'webhook' as const, holder: 'h', lease_expires_at: created, completed_at: created, run_id: null, created_at: created })
  await db.insertInto('job_deliveries').values([delivery('webhook:old', at(-91 * DAY)), delivery('webhook:kept', at(-89 * DAY))]).execute()

  const counts = await cleanup(ctx)
  t.same(counts, {
    users_erased: 0,
    authorization_codes_deleted: 1,
    forum_nonces_deleted: 1,
    password_reset_tokens_deleted: 2,
    phone_verifications_deleted: 1,
    phone_verification_sends_deleted: 1,
    tokens_deleted: 1200,
    mail_outbox_deleted: 1,
    job_runs_deleted: 1,
    webhook_deliveries_deleted: 1
  })
  const ids = async (table: 'authorization_codes' | 'password_reset_tokens' | 'phone_verifications' | 'mail_outbox' | 'job_runs' | 'phone_verification_sends') =>
    (await db.selectFrom(table).select('id').execute()).map((r) => r.id).sort()
  t.same(await ids('authorization_codes'), ['code-live', 'code-used-live'], 'a used code inside its lifetime stays (reuse detection)')
  t.same((await db.selectFrom('forum_connect_nonces').select('nonce_hash').execute()).map((r) => r.nonce_hash), ['n-live'])
  t.same(await ids('password_reset_tokens'), ['r-live'])
  t.same(await ids('phone_verifications'), ['p-live'])
  t.same(await ids('phone_verification_sends'), ['s-recent'])
  t.same(await ids('mail_outbox'), ['m-kept'])
  t.ok((await ids('job_runs')).includes('j-kept') && !(await ids('job_runs')).includes('j-old'))
  t.same((await db.selectFrom('job_deliveries').select('key').execute()).map((r) => r.key), ['webhook:kept'])
  const tokens = (await db.selectFrom('tokens').select('id').execute()).map((r) => r.id)
  t.equal(tokens.length, 3, "the recently expired token and the user's own pair stay")
  t.ok(tokens.includes('recently-expired'))
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: user.authorization } })).statusCode, 200, 'a valid token still works')
  t.same(await cleanup(ctx), { users_erased: 0 }, 'a second run finds nothing')
})

t.test('an account is erased after the grace period and not before; its order keeps its amount', async (t) => {
  const ctx = await testApp(t, { USER_DELETION_GRACE_DAYS: '30', ACCESS_TOKEN_TTL_SECONDS: String(60 * 86400) })
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const key = await createApiKey(ctx.app.db, member.id, ctx.clock)
  const planId = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/admin/memberships', headers: { authorization: admin.authorization }, payload: monthlyPlan })).json().id
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  const sub = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/membership-subscriptions', headers: { authorization: member.authorization }, payload: { mode: 'ORDER', membership: { id: planId } } })).json()
  const order = await ctx.app.db.selectFrom('orders').selectAll().where('user_id', '=', member.id).executeTakeFirstOrThrow()
  t.ok(order.total_minor > 0)
  const mail = (id: string, recipient: string) => ({ id, kind: 'test', recipient, subject: 's', status: 'sent' as const, error: null, created_at: '2026-03-01T09:00:00.000Z', sent_at: null })
  await ctx.app.db.insertInto('mail_outbox').values([mail('to-member', member.email), mail('to-member-as-typed', member.email.toUpperCase()), mail('to-admin', admin.email)]).execute()

  const asked = await ctx.app.inject({ method: 'DELETE', url: '/apis/v2/users/current', headers: { 'x-api-key': key.apiKey } })
  t.equal(asked.statusCode, 202)
  t.same(asked.json(), {
    id: member.id,
    deletionRequestedDate: '2026-03-01T10:00:00.000Z',
    deletionDate: '2026-03-31T10:00:00.000Z',
    _links: { self: { href: '/apis/v2/users/current' } }
  })
  ctx.clock.advance(DAY)
  const repeated = await ctx.app.inject({ method: 'DELETE', url: '/apis/v2/users/current', headers: { authorization: member.authorization } })
  t.match(repeated.json(), { deletionDate: '2026-03-31T10:00:00.000Z' }, 'asking again does not restart the grace period')

  ctx.clock.set('2026-03-31T09:59:00.000Z')
  t.same(await cleanup(ctx), { users_erased: 0 }, 'a minute early: nothing erased')
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': key.apiKey } })).statusCode, 200)

  ctx.clock.set('2026-03-31T10:00:00.000Z')
  t.same(await cleanup(ctx), { users_erased: 1 })
  t.same(await cleanup(ctx), { users_erased: 0 }, 'once')
  const row = await ctx.app.db.selectFrom('users').selectAll().where('id', '=', member.id).executeTakeFirstOrThrow()
  t.match(row, { email: `erased-${member.id}@erased.invalid`, first_name: null, last_name: null, password_hash: '', erased_at: '2026-03-31T10:00:00.000Z' })
  t.notOk(row.email.includes(member.email.split('@')[0]!))
  const recipients = await ctx.app.db.selectFrom('mail_outbox').select(['id', 'recipient']).where('id', 'in', ['to-member', 'to-member-as-typed', 'to-admin']).orderBy('id').execute()
  t.same(
    recipients,
    [
      { id: 'to-admin', recipient: admin.email },
      { id: 'to-member', recipient: row.email },
      { id: 'to-member-as-typed', recipient: row.email }
    ],
    "the mail records no longer hold the member's address; others' are kept"
  )
  t.same(await ctx.app.db.selectFrom('mail_outbox').select('id').where(sql`lower(recipient)`, '=', member.email.toLowerCase()).execute(), [], 'nowhere in the outbox')
  const told = await ctx.app.db.selectFrom('outbox_events').select(['type', 'data']).where('resource_id', '=', member.id).orderBy('seq').execute()
  t.same(told.map((e) => e.type), ['user.created', 'user.deleted'], 'the user events are kept (the feed still tells of them)')
  t.notOk(
    told.some((e) => e.data.toLowerCase().includes(member.email.toLowerCase())),
    'but the events no longer carry the address, in the feed or in a delivery sent again'
  )
  t.same(await ctx.app.db.selectFrom('payment_methods').select('id').where('user_id', '=', member.id).execute(), [])
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': key.apiKey } })).statusCode, 401, 'the API key is revoked')
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: member.authorization } })).statusCode, 401, 'the token is revoked')
  const kept = await ctx.app.db.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirstOrThrow()
  t.same({ total: kept.total_minor, status: kept.status, user: kept.user_id }, { total: order.total_minor, status: order.status, user: member.id }, 'the order keeps its amount for the accounts')
  const ended = await ctx.app.inject({ url: `/apis/v2/membership-subscriptions/${sub.id}`, headers: { authorization: admin.authorization } })
  t.match(ended.json(), { extendedStatus: 'CANCELLED' }, 'the membership ended')
  const login = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'password', username: member.email, password: member.password } })
  t.equal(login.statusCode, 400, 'the old credentials no longer sign in')
})
