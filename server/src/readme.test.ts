import { readFileSync } from 'node:fs'
import t from 'tap'
import { ConfigSchema } from './config.js'

// The README's configuration table is what operators read; it must name every setting there is.
t.test('the README documents every configuration variable', async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  for (const key of Object.keys(ConfigSchema.properties)) {
    t.match(readme, new RegExp(`^\\|[^\\n]*\`${key}\`[^\\n]*\\|`, 'm'), `${key} is in a README settings table`)
  }
})
