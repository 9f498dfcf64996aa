import t from 'tap'
import { readFileSync, statSync } from 'node:fs'
import { ManualClock } from '../clock.js'
import { tempDir } from '../temp-dir.fixture.js'
import { LocalPassword, newPassword } from './local-password.js'
import { SessionStore, SignInAttempts, cookieValue, sessionCookie } from './sessions.js'

const stateDir = (t: { teardown(fn: () => void): void }) => tempDir(t, 'club-agent-access-')

t.test('a new password is random, readable and kept only as an scrypt hash in a 0600 file', async (t) => {
  const dir = stateDir(t)
  const store = new LocalPassword({ stateDir: dir, cost: 1024 })
  t.equal(store.current(), null, 'none before the command ran')
  t.same(await store.verify('anything'), { ok: false })
  const password = await store.rotate()
  t.match(password, /^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/)
  t.not(newPassword(), newPassword())
  const text = readFileSync(store.path, 'utf8')
  t.notMatch(text, password, 'the file holds no clear password')
  t.match(JSON.parse(text), { algorithm: 'scrypt', N: 1024, r: 8, p: 1 })
  t.equal(statSync(store.path).mode & 0o777, 0o600)
  t.match(await store.verify(password), { ok: true })
  t.same(await store.verify(password.toUpperCase()), { ok: false })
  t.same(await store.verify(''), { ok: false })
})

t.test('a running agent notices a password the command wrote meanwhile', async (t) => {
  const dir = stateDir(t)
  const running = new LocalPassword({ stateDir: dir, cost: 1024 })
  const command = new LocalPassword({ stateDir: dir, cost: 1024 })
  const first = await command.rotate()
  const generation = running.current()!.generation
  t.match(await running.verify(first), { ok: true, generation })
  const second = await command.rotate()
  t.not(running.current()!.generation, generation, 'a new generation')
  t.same(await running.verify(first), { ok: false }, 'the old password stops working')
  t.match(await running.verify(second), { ok: true })
})

t.test('sessions expire, belong to one password generation and can be ended', async (t) => {
  const clock = new ManualClock()
  const sessions = new SessionStore({ clock, ttlMs: 60_000, maxSessions: 3 })
  const a = sessions.create('g1')
  t.equal(a.maxAgeSeconds, 60)
  t.ok(sessions.check(a.token, 'g1'))
  t.notOk(sessions.check(a.token, 'g2'), 'another generation ends it')
  t.notOk(sessions.check(a.token, 'g1'), 'for good')
  const b = sessions.create('g1')
  clock.advance(60_000)
  t.notOk(sessions.check(b.token, 'g1'), 'expired')
  const c = sessions.create('g1')
  sessions.end(c.token)
  t.notOk(sessions.check(c.token, 'g1'), 'signed out')
  t.notOk(sessions.check('made-up', 'g1'))
  const many = [1, 2, 3, 4].map(() => sessions.create('g1'))
  t.notOk(sessions.check(many[0]!.token, 'g1'), 'beyond maxSessions the oldest goes')
  t.ok(sessions.check(many[3]!.token, 'g1'))
})

t.test('sign-in attempts are counted per address in a window', async (t) => {
  const clock = new ManualClock()
  const attempts = new SignInAttempts({ clock, maxAttempts: 3, windowMs: 60_000 })
  for (let i = 0; i < 3; i++) t.same(attempts.take('10.0.0.7'), { allowed: true })
  t.same(attempts.take('10.0.0.7'), { allowed: false, retryAfterSeconds: 60 })
  t.same(attempts.take('10.0.0.8'), { allowed: true }, 'another address has its own count')
  clock.advance(45_000)
  t.same(attempts.take('10.0.0.7'), { allowed: false, retryAfterSeconds: 15 })
  clock.advance(15_000)
  t.same(attempts.take('10.0.0.7'), { allowed: true }, 'a new window')
  attempts.reset('10.0.0.7')
  for (let i = 0; i < 3; i++) t.same(attempts.take('10.0.0.7'), { allowed: true }, 'a success forgets the count')
})

t.test('the session cookie and the Cookie header', async (t) => {
  t.equal(sessionCookie('abc', 3600), 'club_agent_session=abc; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict')
  t.equal(cookieValue('a=1; club_agent_session=xyz; b=2', 'club_agent_session'), 'xyz')
  t.equal(cookieValue('club_agent_sessionx=1', 'club_agent_session'), undefined)
  t.equal(cookieValue(undefined, 'club_agent_session'), undefined)
})
