import t from 'tap'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { StateStore, writeFileAtomically } from './state.js'

function store(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-state-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { dir, store: new StateStore(join(dir, 'state')) }
}

t.test('nothing saved yet reads as empty', async (t) => {
  t.same(store(t).store.load(), {})
})

t.test('saves and reads back, mode 0600, no temporary file left', async (t) => {
  const { dir, store: s } = store(t)
  s.save({ serverId: 'sid', pollInterval: 30 })
  t.same(s.load(), { serverId: 'sid', pollInterval: 30 })
  t.equal(statSync(s.path).mode & 0o777, 0o600)
  t.same(readdirSync(join(dir, 'state')), ['state.json'])
  t.same(s.update((x) => ({ ...x, accessToken: 'tok' })), { serverId: 'sid', pollInterval: 30, accessToken: 'tok' })
  t.same(s.load().accessToken, 'tok')
})

t.test('a torn write leaves the previous state readable', async (t) => {
  const { store: s } = store(t)
  s.save({ serverId: 'before' })
  // A crash mid-write leaves a half-written temporary file next to the state, never a half state.
  writeFileSync(`${s.path}.99999.tmp`, '{"serverId": "aft')
  t.same(s.load(), { serverId: 'before' })
  s.save({ serverId: 'after' })
  t.same(s.load(), { serverId: 'after' })
})

t.test('a write that fails midway keeps the previous state', async (t) => {
  const { store: s } = store(t)
  s.save({ serverId: 'before' })
  // The temporary file cannot be written (a folder is in its way), as on a full or broken disk.
  mkdirSync(`${s.path}.x.tmp`)
  t.throws(() => writeFileAtomically(dirname(s.path), s.path, JSON.stringify({ serverId: 'after' }), undefined, () => 'x'))
  t.same(s.load(), { serverId: 'before' })
})

t.test('a link planted where the temporary file goes is never followed (root writes here during updates)', async (t) => {
  const { dir, store: s } = store(t)
  s.save({ serverId: 'before' })
  const victim = join(dir, 'victim')
  writeFileSync(victim, 'precious')
  symlinkSync(victim, `${s.path}.x.tmp`)
  t.throws(() => writeFileAtomically(dirname(s.path), s.path, 'written through the link', undefined, () => 'x'), { code: 'EEXIST' })
  t.equal(readFileSync(victim, 'utf8'), 'precious', 'the file the link points to is untouched')
})
