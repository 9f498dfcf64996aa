import t from 'tap'
import { parseCli, usage } from './cli.js'

t.test('the commands of club-agent', async (t) => {
  t.same(parseCli([]), { kind: 'run' })
  t.same(parseCli(['--config', '/etc/a.json']), { kind: 'run', configPath: '/etc/a.json' })
  t.same(parseCli(['local-password']), { kind: 'local-password' })
  t.same(parseCli(['local-password', '-c', '/etc/a.json']), { kind: 'local-password', configPath: '/etc/a.json' })
  t.throws(() => parseCli(['reboot']), /unknown command reboot/)
  t.match(usage(), /club-agent local-password/)
})
