import t from 'tap'
import { addressTowards, chooseHttpHost } from './bind-address.js'

t.test('the address of the local API: the setting, else the route to the server, else loopback', async (t) => {
  t.same(chooseHttpHost('0.0.0.0', '10.0.0.5'), { host: '0.0.0.0', reason: 'httpHost setting' }, 'an explicit setting wins, even every interface')
  t.same(chooseHttpHost(undefined, '10.0.0.5'), { host: '10.0.0.5', reason: 'the interface that reaches the server' })
  t.equal(chooseHttpHost(undefined, 'fd00::5').host, 'fd00::5')
  for (const route of [undefined, '', '0.0.0.0', '::', 'not-an-address']) {
    t.equal(chooseHttpHost(undefined, route).host, '127.0.0.1', `never every interface by default (${route})`)
  }
})

t.test('the route to a server on this machine goes out through loopback', async (t) => {
  t.equal(await addressTowards('http://127.0.0.1:3000'), '127.0.0.1')
  t.match(await addressTowards('https://localhost'), /^(127\.0\.0\.1|::1)$/)
  t.equal(await addressTowards('not a url'), undefined)
  t.equal(await addressTowards('http://no-such-host.invalid:3000'), undefined)
})
