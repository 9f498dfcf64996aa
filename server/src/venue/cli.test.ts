import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../cli.js'

t.test('a venue is set up from the shell, each command printing what it created', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { DATABASE_URL: join(dir, 'club.db') }
  const run = async (...argv: string[]) => {
    let out = ''
    let err = ''
    const code = await runCli(argv, env, (s) => (out += s), (s) => (err += s))
    return { code, out, err, json: () => JSON.parse(out) }
  }

  const region = (await run('regions', 'create', '--name', 'North')).json()
  t.match(region, { name: 'North', slug: 'north' })
  const area = (await run('areas', 'create', '--name', 'Hall', '--region', region.id)).json()
  t.match(area, { slug: 'hall', region: { id: region.id } })
  const pod = (await run('pods', 'create', '--name', 'Pod A', '--area', area.id)).json()
  t.match(pod, { area: { id: area.id } })
  const court = (await run('courts', 'create', '--name', 'Court 1', '--area', area.id, '--pod', pod.id)).json()
  t.match(court, { area: { id: area.id }, pod: { id: pod.id } })
  const series = (await run('series', 'create', '--name', 'Ladder', '--type', 'LEAGUE', '--subtype', 'SINGLES')).json()
  t.match(series, { type: 'LEAGUE', subtype: 'SINGLES' })
  const event = await run(
    'events', 'create', '--name', 'Ladder night', '--type', 'LEAGUE', '--start', '2026-05-05T18:00:00Z', '--end', '2026-05-05T20:00:00Z',
    '--area', area.id, '--pod', pod.id, '--court', court.id, '--tag', 'ladder', '--tag', 'evening', '--series', series.id, '--description', 'Weekly'
  )
  t.equal(event.code, 0, event.err)
  t.match(event.json(), {
    name: 'Ladder night',
    description: 'Weekly',
    tags: ['ladder', 'evening'],
    areas: { items: [{ id: area.id }] },
    pods: { items: [{ id: pod.id }] },
    courts: { items: [{ id: court.id }] },
    series: { id: series.id }
  })

  const missing = await run('areas', 'create', '--name', 'Orphan')
  t.equal(missing.code, 2)
  t.match(missing.err, /missing required flag --region/)
  const dangling = await run('areas', 'create', '--name', 'Orphan', '--region', 'nope')
  t.equal(dangling.code, 1)
  t.match(dangling.err, /club areas create: body\.region\.id: no region with id "nope"/)
  const badDate = await run('events', 'create', '--name', 'x', '--type', 'T', '--start', 'monday', '--end', '2026-05-05T20:00:00Z')
  t.equal(badDate.code, 2)
  t.match(badDate.err, /--start must be an ISO 8601 date-time/)
})
