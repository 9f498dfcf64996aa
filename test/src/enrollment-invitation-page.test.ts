// The page behind the enrolment invitation mail, in a real browser against a real server and a real
// mail relay (the fake SMTP server): from the mailed link to an accepted enrollment, the decline
// path, and the links that can no longer be used saying so in words.
import t from 'tap'
import { monthlyPlan } from '@club/server/testing'
import { setDefaultPaymentMethod } from '@club/server/users/payment-methods'
import { PHONE, launchBrowser, openPage } from './browser.js'
import { decoded, mailedLinks as linksTo, serverWithMailRelay } from './mail.js'
import { waitFor } from './support.js'

const mailedLinks = (messages: string[]) => linksTo(messages, 'enrollment-invitation')

t.test('from the mailed link to an accepted enrollment, the decline path, and used or withdrawn links', async (t) => {
  const { server, smtp } = await serverWithMailRelay(t)
  const db = server.app!.db

  const plan = await server.call('POST', '/apis/v2/admin/memberships', await server.admin(), monthlyPlan)
  t.equal(plan.status, 201)
  const owner = await server.user('member')
  await db.updateTable('users').set({ first_name: 'Ana', last_name: 'Ruiz' }).where('id', '=', owner.id).execute()
  await setDefaultPaymentMethod(db, owner.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, server.app!.clock)
  const bought = await server.call('POST', '/apis/v2/membership-subscriptions', owner.authorization, { mode: 'ORDER', membership: { id: plan.json.id } })
  t.equal(bought.status, 201)
  const enrollments = `/apis/v2/membership-subscriptions/${bought.json.id}/enrollments`

  /** Ana invites a new member; their enrollment and the link their mail carries. */
  const invite = async () => {
    const member = await server.user('member')
    const count = mailedLinks(smtp.messages).length
    const res = await server.call('POST', enrollments, owner.authorization, { email: member.email })
    t.equal(res.status, 201)
    const links = await waitFor('the invitation mail', () => mailedLinks(smtp.messages).length > count && mailedLinks(smtp.messages))
    return { member, enrollment: res.json, link: links[links.length - 1]! }
  }
  const statusOf = async (id: string) =>
    (await db.selectFrom('membership_enrollments').select('invitation_status').where('id', '=', id).executeTakeFirstOrThrow()).invitation_status

  const browser = await launchBrowser(t)
  const { page, foreignRequests } = await openPage(browser, PHONE)

  const first = await invite()
  t.match(first.link, `${server.url}/enrollment-invitation?token=`, 'the link names this server (PUBLIC_BASE_URL)')
  t.match(decoded(smtp.messages[0]!), /Ana Ruiz invited you to share their membership "Adult monthly"/)

  await t.test('the page opens from the link: the invitation in words, the token out of the address bar', async (t) => {
    const response = await page.goto(first.link)
    t.equal(response?.status(), 200)
    t.equal(response?.headers()['referrer-policy'], 'no-referrer', 'the token in the address is sent to no other site')
    await page.getByRole('heading', { name: 'An invitation to a membership' }).waitFor()
    t.equal(await page.locator('#invitation').innerText(), 'Ana Ruiz invited you to share their membership "Adult monthly".')
    t.equal(page.url(), `${server.url}/enrollment-invitation`, 'the token left the address bar')
  })

  await t.test('Accept: said in words, and the enrollment is accepted', async (t) => {
    await page.getByRole('button', { name: 'Accept' }).click()
    await page.getByRole('heading', { name: 'Invitation answered' }).waitFor()
    t.match(await page.getByRole('status').innerText(), /You accepted: you now share the membership "Adult monthly" of Ana Ruiz/)
    const seen = await server.call('GET', `${enrollments}/${first.enrollment.id}`, first.member.authorization)
    t.match(seen.json, { invitationStatus: 'ACCEPTED', user: { id: first.member.id } })
  })

  await t.test('the used link says so', async (t) => {
    await page.goto(first.link)
    await page.getByRole('alert').filter({ hasText: 'This invitation was already accepted' }).waitFor()
    t.equal(await page.getByRole('button', { name: 'Accept' }).count(), 0, 'nothing to press')
  })

  await t.test('Decline: said in words, and nothing changes for them', async (t) => {
    const second = await invite()
    await page.goto(second.link)
    await page.locator('#invitation').waitFor()
    await page.getByRole('button', { name: 'Decline' }).click()
    await page.getByRole('status').filter({ hasText: 'You declined the invitation of Ana Ruiz: nothing changes for you.' }).waitFor()
    t.equal(await statusOf(second.enrollment.id), 'DECLINED')
  })

  await t.test('a withdrawn invitation says so', async (t) => {
    const third = await invite()
    t.equal((await server.call('DELETE', `${enrollments}/${third.enrollment.id}`, owner.authorization)).status, 200)
    await page.goto(third.link)
    await page.getByRole('alert').filter({ hasText: 'This invitation was withdrawn by the member who sent it' }).waitFor()
    t.equal(await statusOf(third.enrollment.id), 'WITHDRAWN')
  })

  await t.test('without a token the page says where it comes from', async (t) => {
    await page.evaluate(() => sessionStorage.clear())
    await page.goto(`${server.url}/enrollment-invitation`)
    t.match(await page.getByRole('alert').innerText(), /opens from the link in an invitation mail/)
  })
  t.same(foreignRequests(server.url), [], 'the page loads nothing from another origin')
})
