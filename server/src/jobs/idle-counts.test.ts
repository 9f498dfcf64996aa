// A job run that found nothing to do says so in its counts: every scheduled job, run on an empty
// club, answers its headline counts as 0 (`{"expired": 0}`), never `{}`.
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { jobNames } from './registry.js'

t.test('every scheduled job run with nothing to do counts 0, not {}', async (t) => {
  const ctx = await testApp(t)
  for (const job of jobNames) {
    const outcome = await ctx.app.jobs.run(job, { trigger: 'cli', date: ctx.clock.now() })
    if (outcome.kind !== 'ran') {
      t.fail(`${job}: ${outcome.kind}`)
      continue
    }
    const counts = outcome.run.counts as Record<string, number>
    t.not(Object.keys(counts).length, 0, `${job} names what it did not do`)
    // The summary always has a day to sum up: it makes one even for an empty club.
    if (job === 'summary') t.same(counts, { made: 1 })
    else t.ok(Object.values(counts).every((n) => n === 0), `${job}: ${JSON.stringify(counts)}`)
  }
})
