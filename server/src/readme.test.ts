import { readFileSync } from 'node:fs'
import t from 'tap'
import { ConfigSchema } from './config.js'

// The settings tables of docs/running-a-server.md are what operators read; they must name every
// setting there is.
t.test("the operator's page documents every configuration variable", async (t) => {
  const page = readFileSync(new URL('../../docs/running-a-server.md', import.meta.url), 'utf8')
  for (const key of Object.keys(ConfigSchema.properties)) {
    t.match(page, new RegExp(`^\\|[^\\n]*\`${key}\`[^\\n]*\\|`, 'm'), `${key} is in a settings table of docs/running-a-server.md`)
  }
})
