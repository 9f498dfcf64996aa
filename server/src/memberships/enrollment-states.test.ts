// An enrollment's state in the reference's own fields (issue 47): an integrator who counts members by
// startDate and endDate never counts an invitation. Pending: no startDate, named in `errors`; declined
// or withdrawn: an endDate (when), named in `errors`; accepted: a startDate, `errors` null; ended: its endDate.
import t from 'tap'
import { enrollmentSetup as setup } from './test-fixtures.js'

const MINE = '/apis/v2/membership-enrollments'

/** Who is a member at `at` by the reference's fields alone: begun, and not ended. */
const membersAt = (items: Array<{ user: { id: string }; startDate?: string; endDate?: string }>, at: string) =>
  items.filter((e) => e.startDate !== undefined && e.startDate <= at && (e.endDate === undefined || e.endDate > at)).map((e) => e.user.id).sort()

t.test('pending, declined and withdrawn invitations are no members by the dates; accepted and removed ones are as they were', async (t) => {
  const { ctx, call, owner, member } = await setup(t)
  const { who: ana, url } = await owner()
  const [pending, declined, withdrawn, accepted] = [await member('Pia', 'Ruiz'), await member('Dan', 'Ruiz'), await member('Wil', 'Ruiz'), await member('Acc', 'Ruiz')]
  ctx.clock.set('2026-02-03T10:00:00.000Z')
  const invite = async (who: { id: string }) => (await call('POST', url, ana, { user: { id: who.id } })).json()
  const invitations = { pending: await invite(pending), declined: await invite(declined), withdrawn: await invite(withdrawn), accepted: await invite(accepted) }
  t.match(invitations.pending, { invitationStatus: 'INVITED', errors: [{ code: 'INVITATION_PENDING', message: /not a member until they accept/ }] })
  t.notOk('startDate' in invitations.pending, 'a pending invitation has not begun: no startDate')
  t.notOk('endDate' in invitations.pending)

  ctx.clock.set('2026-02-04T10:00:00.000Z')
  const declinedAnswer = await call('POST', `${url}/${invitations.declined.id}/acceptance`, declined, { accept: false })
  t.equal(declinedAnswer.statusCode, 200)
  t.match(declinedAnswer.json(), { invitationStatus: 'DECLINED', endDate: '2026-02-04T10:00:00.000Z', errors: [{ code: 'INVITATION_DECLINED' }] })
  t.notOk('startDate' in declinedAnswer.json())
  const withdrawnAnswer = await call('DELETE', `${url}/${invitations.withdrawn.id}`, ana)
  t.equal(withdrawnAnswer.statusCode, 200)
  t.match(withdrawnAnswer.json(), { invitationStatus: 'WITHDRAWN', endDate: '2026-02-04T10:00:00.000Z', errors: [{ code: 'INVITATION_WITHDRAWN' }] })
  t.match((await call('POST', `${url}/${invitations.accepted.id}/acceptance`, accepted, { accept: true })).json(), { startDate: '2026-02-04T10:00:00.000Z', errors: null })

  const listed = (await call('GET', url, ana)).json().items
  t.equal(listed.length, 5, 'every invitation stays listed, with its state')
  t.same(membersAt(listed, '2026-02-05T10:00:00.000Z'), [ana.id, accepted.id].sort(), 'only the owner and the accepted member count')
  t.same(membersAt(listed, '2026-02-04T10:00:00.000Z'), [ana.id, accepted.id].sort(), 'at the moment of declining, no one declined counts either')
  for (const who of [pending, declined, withdrawn]) {
    const own = (await call('GET', MINE, who)).json().items
    t.same(membersAt(own, '2026-02-05T10:00:00.000Z'), [], "and in the invited user's own list")
  }

  ctx.clock.set('2026-02-06T10:00:00.000Z')
  const acceptedRow = listed.find((e: { user: { id: string } }) => e.user.id === accepted.id)
  t.match((await call('DELETE', `${url}/${acceptedRow.id}`, ana)).json(), { endDate: '2026-02-06T10:00:00.000Z', startDate: '2026-02-04T10:00:00.000Z', errors: null })
  t.same(membersAt((await call('GET', url, ana)).json().items, '2026-02-07T10:00:00.000Z'), [ana.id], 'a removed member has ended')
})
