import t from 'tap'
import { passwordProblem, resetOutcome } from './view.js'

t.test('the two passwords are checked as the server will, and must match', async (t) => {
  t.match(passwordProblem('short', 'short'), /at least 8/)
  t.match(passwordProblem('aaaaaaaaa', 'aaaaaaaaa'), /one character repeated/)
  t.match(passwordProblem('x'.repeat(1025) + 'y', ''), /at most 1024/)
  t.match(passwordProblem('a fine password', 'a fine pasword'), /not the same/)
  t.equal(passwordProblem('a fine password', 'a fine password'), null)
  t.equal(passwordProblem('🙂🙂🙂🙂🙂🙂🙂🐢', '🙂🙂🙂🙂🙂🙂🙂🐢'), null, 'characters are counted, not UTF-16 units')
})

t.test("the server's answers in words: expired, used and unknown links say so", async (t) => {
  t.equal(resetOutcome(200, '').kind, 'done')
  t.match(resetOutcome(200, ''), { text: /API keys of the account were revoked/ })
  t.match(resetOutcome(400, 'token has expired; request a new password reset'), { kind: 'link', text: /expired/ })
  t.match(resetOutcome(400, 'token was already used; request a new password reset'), { kind: 'link', text: /already used/ })
  t.match(resetOutcome(400, 'token is not a valid password reset token'), { kind: 'link', text: /not valid/ })
  t.match(resetOutcome(400, 'body.token must NOT have fewer than 1 characters'), { kind: 'link' })
  t.match(resetOutcome(400, 'password must not be one character repeated'), { kind: 'password', text: /one character repeated/ })
  t.match(resetOutcome(429, 'Too many', 600), { kind: 'retry', text: /in 10 min/ })
  t.match(resetOutcome(503, 'database busy'), { kind: 'retry', text: /not changed \(503/ })
})
