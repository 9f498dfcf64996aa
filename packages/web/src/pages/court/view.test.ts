import t from 'tap'
import { en } from './strings/en.js'
import { scriptWords } from './html.js'
import { chapterText, chapterTime } from './match.js'
import { clockOffset, downloadName, failureText, say, stepClasses, tooOld, underWay } from './view.js'

t.test('say fills placeholders; one without a value is left out', async (t) => {
  t.equal(say(en, 'tap.label', { seconds: 30 }), 'Last 30 s')
  t.equal(say(en, 'mine.item', { seconds: 30 }), '30 s at ')
})

t.test('the steps: done before the current one, all done when READY, none for an end that is not READY', async (t) => {
  t.same(stepClasses('REQUESTED'), ['active', '', '', ''])
  t.same(stepClasses('UPLOADING'), ['done', 'done', 'active', ''])
  t.same(stepClasses('READY'), ['done', 'done', 'done', 'done'])
  t.same(stepClasses('FAILED'), ['', '', '', ''])
  t.ok(underWay('EXPORTING'))
  t.notOk(underWay('READY'))
  t.notOk(underWay('TAKEN_DOWN'))
})

t.test("a failure in words: a reason the page knows, another named, the member's item given back", async (t) => {
  t.equal(failureText(en, { reason: 'no_footage' }, false), en['reason.no_footage'])
  t.equal(failureText(en, { reason: 'redemption_cancelled' }, false), 'The replay could not be made (redemption_cancelled).')
  t.equal(failureText(en, {}, false), 'The replay could not be made (other).')
  t.equal(failureText(en, { reason: 'camera_error' }, true), `${en['reason.camera_error']} Your replay item was given back.`)
  t.equal(failureText(en, { reason: 'recording_ended' }, true), 'The camera stopped recording before the end of your replay. Your replay item was given back.', 'a box\'s recording that ended before the replay did')
})

t.test("the phone's offset from the server: measured at the middle of the page's round trip", async (t) => {
  // The page started 2 s ago on a phone 5 min fast; its request went out at 100 ms and its answer
  // began at 300 ms, when the server wrote 1,000,000.
  const phoneNow = 1_000_000 + 300_000 + 1_800
  t.equal(clockOffset(1_000_000, phoneNow, 2_000, 100, 300), -300_000)
})

t.test('a kept tap is sent only within REPLAY_MAX_AGE_SECONDS of its moment, on the server clock', async (t) => {
  const end = '2026-01-01T10:00:00.000Z'
  t.notOk(tooOld({ end }, Date.parse(end) + 600_000, 600))
  t.ok(tooOld({ end }, Date.parse(end) + 600_001, 600))
  t.equal(downloadName('court-3', end), 'court-3-2026-01-01T10-00-00-000Z.mp4')
})

t.test("a match's chapter: its label, its moment in minutes and seconds, the player's own rally marked", async (t) => {
  t.equal(chapterTime(0), '0:00')
  t.equal(chapterTime(65.9), '1:05')
  t.equal(chapterTime(5585), '93:05', 'a long match counts on in minutes')
  t.equal(chapterText(en, { at: 754, label: 'Replay 19:42' }), 'Replay 19:42 · 12:34')
  t.equal(chapterText(en, { at: 754, label: 'Replay 19:42', replay: { id: 'r1' } }), 'Replay 19:42 · 12:34 · your rally')
})

t.test('the page carries the words its script says, not those its HTML already says', async (t) => {
  const words = scriptWords(en)
  t.equal(words['match.angle'], 'Camera {n}')
  t.equal(words['status.READY'], 'Ready')
  t.notOk('footage.notice' in words)
  t.notOk('sign.instructions' in words)
})
