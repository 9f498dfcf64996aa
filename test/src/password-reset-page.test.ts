// The page behind the password reset mail, in a real browser against a real server and a real mail
// relay (the fake SMTP server): from the mailed link to signing in with the new password, and the
// links that can no longer be used saying so in words.
import t from 'tap'
import { PHONE, launchBrowser, openPage } from './browser.js'
import { decoded, mailedLinks as linksTo, serverWithMailRelay } from './mail.js'
import { waitFor } from './support.js'

const mailedLinks = (messages: string[]) => linksTo(messages, 'password-reset')

t.test('from the mailed link to signing in with the new password', async (t) => {
  const { server, smtp } = await serverWithMailRelay(t)
  const staff = await server.user('staff')
  const browser = await launchBrowser(t)
  const { page, requests, foreignRequests } = await openPage(browser, PHONE)

  const askForLink = () =>
    fetch(`${server.url}/apis/v2/oauth2/users/credentials`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: staff.email })
    })
  t.equal((await askForLink()).status, 200)
  const [link] = await waitFor('the reset mail', () => mailedLinks(smtp.messages)[0] && mailedLinks(smtp.messages))
  t.match(link, `${server.url}/password-reset?token=`, 'the link names this server (PUBLIC_BASE_URL)')
  t.match(decoded(smtp.messages[0]!), /revokes the API keys of your account/, 'the mail says what a reset ends')

  await t.test('the page opens from the link: the rules shown, the token out of the address bar', async (t) => {
    const response = await page.goto(link!)
    t.equal(response?.status(), 200)
    t.equal(response?.headers()['referrer-policy'], 'no-referrer', 'the token in the address is sent to no other site')
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor()
    t.match(await page.locator('#rules').innerText(), /At least 8 characters/)
    t.equal(page.url(), `${server.url}/password-reset`, 'the token left the address bar')
  })

  await t.test('two different passwords, or a weak one, are refused on the page and nothing is sent', async (t) => {
    await page.getByLabel('New password', { exact: true }).fill('a brand new password')
    await page.getByLabel('The new password again').fill('a brand new pasword')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByRole('alert').filter({ hasText: 'not the same' }).waitFor()
    t.equal(await page.getByLabel('The new password again').getAttribute('aria-invalid'), 'true')
    await page.getByLabel('New password', { exact: true }).fill('aaaaaaaaaa')
    await page.getByLabel('The new password again').fill('aaaaaaaaaa')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByRole('alert').filter({ hasText: 'one character repeated' }).waitFor()
    t.notOk(requests.some((r) => r.includes('/credentials/reset')), 'no request left the page')
  })

  await t.test('the new password typed twice: changed, said in words', async (t) => {
    await page.getByLabel('New password', { exact: true }).fill('a brand new password')
    await page.getByLabel('The new password again').fill('a brand new password')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByRole('heading', { name: 'Password changed' }).waitFor()
    t.match(await page.getByRole('status').innerText(), /Every device signed in to your account was signed out/)
  })

  await t.test('signing in with the new password works, with the old one not', async (t) => {
    await page.getByRole('link', { name: 'console' }).click()
    await page.getByLabel('E-mail').fill(staff.email)
    await page.getByLabel('Password').fill(staff.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').filter({ hasText: 'Not signed in' }).waitFor()
    await page.getByLabel('Password').fill('a brand new password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('.who', { hasText: `${staff.email} (staff)` }).waitFor()
    t.pass('signed in to the console with the new password')
  })

  await t.test('the used link says so, and a new one can be asked for on the page', async (t) => {
    await page.goto(link!)
    await page.getByLabel('New password', { exact: true }).fill('yet another password')
    await page.getByLabel('The new password again').fill('yet another password')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByRole('alert').filter({ hasText: 'This link was already used' }).waitFor()
    await page.getByLabel('E-mail of your account').fill(staff.email)
    await page.getByRole('button', { name: 'Send a new link' }).click()
    await page.getByRole('status').filter({ hasText: 'a new link is on its way' }).waitFor()
    await waitFor('the second mail', () => mailedLinks(smtp.messages).length === 2)
    t.pass('used, in words; a new link mailed')
  })

  await t.test('an expired link says so', async (t) => {
    const second = mailedLinks(smtp.messages)[1]!
    // An hour passed: the server's own clock is real here, so the row is aged instead.
    await server.app!.db.updateTable('password_reset_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute()
    await page.goto(second)
    await page.getByLabel('New password', { exact: true }).fill('yet another password')
    await page.getByLabel('The new password again').fill('yet another password')
    await page.getByRole('button', { name: 'Change the password' }).click()
    await page.getByRole('alert').filter({ hasText: 'This link has expired' }).waitFor()
    t.pass('expired, in words')
  })

  await t.test('without a token the page says where it comes from', async (t) => {
    await page.evaluate(() => sessionStorage.clear())
    await page.goto(`${server.url}/password-reset`)
    t.match(await page.getByRole('alert').innerText(), /opens from the link in a password reset mail/)
  })
  t.same(foreignRequests(server.url), [], 'the page loads nothing from another origin')
})
