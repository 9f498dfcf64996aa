import t from 'tap'
import { linkOutcome, type Invitation } from './view.js'

const invitation = (invitationStatus: Invitation['invitationStatus']): Invitation => ({
  inviter: { name: 'Ana Ruiz' },
  membership: { displayName: 'Family monthly' },
  invitationStatus
})

t.test('the invitation in words: who invites, to which membership', async (t) => {
  t.same(linkOutcome(200, invitation('INVITED')), { kind: 'invitation', text: 'Ana Ruiz invited you to share their membership "Family monthly".' })
  t.match(linkOutcome(200, invitation('ACCEPTED'), true), { kind: 'done', text: /You accepted: you now share the membership "Family monthly" of Ana Ruiz/ })
  t.match(linkOutcome(200, invitation('DECLINED'), false), { kind: 'done', text: /You declined the invitation of Ana Ruiz: nothing changes/ })
})

t.test("the server's refusals in words: unknown, used, withdrawn and expired links say so", async (t) => {
  t.match(linkOutcome(400, 'token is not a valid invitation token'), { kind: 'closed', text: /not valid/ })
  t.match(linkOutcome(400, 'body.token must NOT have fewer than 1 characters'), { kind: 'closed', text: /not valid/ })
  t.match(linkOutcome(409, 'the invitation was already answered (ACCEPTED)'), { kind: 'closed', text: /already accepted/ })
  t.match(linkOutcome(409, 'the invitation was already answered (DECLINED)'), { kind: 'closed', text: /already declined/ })
  t.match(linkOutcome(409, 'the invitation was withdrawn; it can no longer be answered'), { kind: 'closed', text: /withdrawn/ })
  t.match(linkOutcome(409, 'the invitation has expired: the membership subscription is no longer in force (CANCELLED)'), { kind: 'closed', text: /expired/ })
  t.match(linkOutcome(409, 'this plan covers at most 2 members per subscription (maxEnrollments), and 2 are enrolled'), {
    kind: 'closed',
    text: /could not be accepted: this plan covers at most 2 members/
  })
  t.match(linkOutcome(429, 'Too many', undefined, 600), { kind: 'retry', text: /in 10 min/ })
  t.match(linkOutcome(503, 'database busy', true), { kind: 'retry', text: /Nothing was answered \(503/ })
})
