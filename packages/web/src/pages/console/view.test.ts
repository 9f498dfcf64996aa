import t from 'tap'
import type { ReplayServer } from '@club/contract'
import { boxName, claimText, closestField, deliveryText, eventTypesOf, errorField, filterBoxes, footageNoticeText, footageViewerText, numberValue, onlineState, pickedUp, setPath, sortBoxes, updateText } from './view.js'
import { kindText, statusText } from './replays.js'

t.test('a 400 message names its form field', async (t) => {
  const cases: Array<[string, string | null]> = [
    ['body.cameras.0.distortion1 must be <= 1', 'cameras.0.distortion1'],
    ['body.cameras.0.feed must match pattern "^(rtsps?|https?|srt|file)://.+"', 'cameras.0.feed'],
    ['body.cameras.1.feed is required', 'cameras.1.feed'],
    ['body.cameras.0."lens" is not allowed', 'cameras.0.lens'],
    ['body.logoPlacement must be one of top-left, top-right', 'logoPlacement'],
    ['body.config.cameras[0].lens… must be a number', 'cameras.0.lens'],
    ['cameras[1].id "a" is already the id of cameras[0]: camera ids must be unique', 'cameras.1.id'],
    ['cameras[0].courtIds[2] "x" is not a court of the box\'s area 1', 'cameras.0.courtIds.2'],
    ['cameras[0].courtIds[0]: the box has no area yet', 'cameras.0.courtIds.0'],
    ['body must have required property cameras', null],
    ['the box is not approved', null],
    ['', null]
  ]
  for (const [message, field] of cases) t.equal(errorField(message), field, message)
})

t.test('an unknown field falls back to its closest parent the form has', async (t) => {
  const fields = new Set(['cameras.0', 'cameras.0.feed', 'cameras.0.courtIds', 'logoPath'])
  const has = (p: string) => fields.has(p)
  t.equal(closestField('cameras.0.feed', has), 'cameras.0.feed')
  t.equal(closestField('cameras.0.courtIds.2', has), 'cameras.0.courtIds')
  t.equal(closestField('cameras.0.lens', has), 'cameras.0')
  t.equal(closestField('cameras.3.feed', has), null)
})

const box = (over: Partial<ReplayServer>): ReplayServer => ({
  id: 'id',
  deviceId: 'dev',
  hostname: null,
  displayName: null,
  status: 'APPROVED',
  lastSeenAt: null,
  online: false,
  version: null,
  localIp: null,
  serverUrl: null,
  area: null,
  config: null,
  targetVersion: null,
  architecture: null,
  updateWindow: null,
  updateState: null,
  updateVersion: null,
  updateReason: null,
  keyFingerprint: null,
  keyAdoptedDate: null,
  keyAdoptedFrom: null,
  health: null,
  claims: [],
  createdDate: '2026-03-01T10:00:00.000Z',
  updatedDate: '2026-03-01T10:00:00.000Z',
  _links: { self: { href: '/x' } },
  ...over
})

t.test('the online dot: online, gone quiet, never seen', async (t) => {
  t.same(onlineState(box({ online: true, lastSeenAt: '2026-03-01T10:00:00.000Z' })), { state: 'online', label: 'Online' })
  t.same(onlineState(box({ online: false, lastSeenAt: '2026-03-01T10:00:00.000Z' })), { state: 'offline', label: 'Offline' })
  t.same(onlineState(box({ online: false, lastSeenAt: null })), { state: 'never', label: 'Never seen' })
})

t.test('a change is picked up only by a poll after it (lastSeenAt is rounded down to the second)', async (t) => {
  const updatedDate = '2026-03-01T10:00:05.400Z'
  t.notOk(pickedUp(box({ updatedDate, lastSeenAt: null })))
  t.notOk(pickedUp(box({ updatedDate, lastSeenAt: '2026-03-01T10:00:05.000Z' })), 'the same second may be before the change')
  t.ok(pickedUp(box({ updatedDate, lastSeenAt: '2026-03-01T10:00:06.000Z' })))
})

t.test('the list: pending first, then by area name, then by name; filters by status and area', async (t) => {
  const names = new Map([['a1', 'Zeta hall'], ['a2', 'Alpha hall']])
  const boxes = [
    box({ id: 'z-approved', displayName: 'B', area: { id: 'a1' } }),
    box({ id: 'a-approved', displayName: 'C', area: { id: 'a2' } }),
    box({ id: 'a-approved-2', displayName: 'A', area: { id: 'a2' } }),
    box({ id: 'revoked', status: 'REVOKED', hostname: 'h' }),
    box({ id: 'pending', status: 'PENDING', deviceId: 'new' })
  ]
  t.same(sortBoxes(boxes, names).map((b) => b.id), ['pending', 'a-approved-2', 'a-approved', 'z-approved', 'revoked'])
  t.same(filterBoxes(boxes, { status: 'PENDING' }).map((b) => b.id), ['pending'])
  t.same(filterBoxes(boxes, { areaId: 'a2' }).map((b) => b.id), ['a-approved', 'a-approved-2'])
  t.same(filterBoxes(boxes, { areaId: 'none' }).map((b) => b.id), ['revoked', 'pending'])
  t.same(filterBoxes(boxes, { status: '', areaId: '' }).length, 5)
  t.equal(boxName(box({ deviceId: 'd', hostname: 'h', displayName: null })), 'h')
  t.equal(boxName(box({ deviceId: 'd', hostname: null, displayName: null })), 'd')
})

t.test('form values become the configuration', async (t) => {
  const draft: Record<string, unknown> = { cameras: [] }
  setPath(draft, 'cameras.0.id', 'cam-1')
  setPath(draft, 'cameras.0.distortion1', numberValue(' 0.25 '))
  setPath(draft, 'cameras.1.id', 'cam-2')
  setPath(draft, 'logoPath', '/l.png')
  t.same(draft, { cameras: [{ id: 'cam-1', distortion1: 0.25 }, { id: 'cam-2' }], logoPath: '/l.png' })
  t.equal(numberValue(''), undefined, 'empty is left out')
  t.equal(numberValue('abc'), 'abc', 'not a number: sent as typed, for the server to name')
  t.equal(numberValue('-1e-1'), -0.1)
})

t.test("a box's update in words: what it waits for, and why a version is not tried again", async (t) => {
  const none = { updateState: null, updateVersion: null, updateReason: null, updateWindow: null }
  t.equal(updateText(none), null, 'no update: nothing shown')
  t.equal(updateText({ ...none, updateState: 'DOWNLOADING', updateVersion: '1.2.0' }), 'Downloading 1.2.0')
  t.equal(
    updateText({ ...none, updateState: 'WAITING_FOR_IDLE', updateVersion: '1.2.0', updateWindow: '02:00-05:00' }),
    '1.2.0 downloaded; installs when the window 02:00-05:00 opens'
  )
  t.match(updateText({ ...none, updateState: 'WAITING_FOR_IDLE', updateVersion: '1.2.0' }), /no export runs and no event on its courts is near/)
  t.equal(updateText({ ...none, updateState: 'INSTALLING', updateVersion: '1.2.0' }), 'Installing 1.2.0')
  t.equal(
    updateText({ ...none, updateState: 'ROLLED_BACK', updateVersion: '1.3.0', updateReason: 'no poll within 5 minutes' }),
    '1.3.0 did not come up and was rolled back: no poll within 5 minutes; it is not tried again until the target changes'
  )
  t.match(updateText({ ...none, updateState: 'FAILED', updateVersion: '1.3.0', updateReason: 'the signature does not match' }), /^1\.3\.0 was refused: the signature does not match/)
})

t.test('a claim in words: where from, when, what it reported and what it showed of the key', async (t) => {
  const claim = {
    id: 'c1',
    sourceIp: '203.0.113.9',
    keyFingerprint: null,
    sameKey: false,
    proof: 'NONE' as const,
    proofProblem: null,
    hostname: 'evil',
    displayName: null,
    version: null,
    localIp: null,
    serverUrl: 'http://attacker.example/',
    registrations: 1,
    createdDate: '2026-03-01T10:00:00.000Z',
    updatedDate: '2026-03-01T10:05:00.000Z'
  }
  const at = (iso: string) => iso.slice(11, 16)
  t.equal(
    claimText(claim, at),
    'This device id registered again from 203.0.113.9 at 10:05, reporting serverUrl http://attacker.example/, hostname evil. It proved no box key.'
  )
  t.equal(
    claimText({ ...claim, registrations: 30, hostname: null, serverUrl: null, keyFingerprint: 'SHA256:abc', proof: 'PROVEN' }, at),
    'This device id registered again from 203.0.113.9 at 10:05 (30 times, first at 10:00), reporting nothing about itself. ' +
      "It proved it holds another key, SHA256:abc: accept only when the box's installer reads you this fingerprint."
  )
  t.match(claimText({ ...claim, proof: 'REFUSED', proofProblem: 'the signature does not verify' }, at), /no key it could prove \(the signature does not verify\)/)
  t.match(claimText({ ...claim, keyFingerprint: 'SHA256:abc', sameKey: true, proof: 'PROVEN' }, at), /the box's own key SHA256:abc, which the box proves by itself: this claim is not the box; reject it/)
})

t.test('the footage notice and who looked, in words', async (t) => {
  const notice = { replayMaxAgeSeconds: 600, replayRetentionDays: 30, footageLogRetentionDays: 180, contact: '' }
  t.match(footageNoticeText(notice), /the last 10 min; older footage is for staff and admins, for a reason they type\. A replay is kept 30 days\./)
  t.match(footageNoticeText(notice), /kept 180 days\. Questions about the footage: the club's desk\.$/)
  t.match(footageNoticeText({ ...notice, contact: 'privacy@club.example.org' }), /Questions about the footage: privacy@club\.example\.org\.$/)
  t.equal(footageViewerText({ actor: 'staff', user: { id: 'u1' }, guestSession: null }), 'staff u1')
  t.equal(footageViewerText({ actor: 'guest', user: null, guestSession: { id: 'g1' } }), 'guest g1')
})

t.test("a replay's status says why it failed, or why staff took it down", async (t) => {
  t.equal(statusText({ status: 'READY' }), 'READY')
  t.equal(statusText({ status: 'FAILED', reason: 'no_footage' }), 'FAILED (no footage)')
  t.equal(statusText({ status: 'TAKEN_DOWN', takedown: { date: '2026-03-01T10:00:00.000Z', by: null, reason: 'a parent asked' } }), 'TAKEN_DOWN (a parent asked)')
  t.equal(statusText({ status: 'TAKEN_DOWN', takedown: { date: '2026-03-01T10:00:00.000Z' } }), 'TAKEN_DOWN', 'without the reason (not staff): the status alone')
})

t.test('webhook endpoints: the typed event types, and a delivery in a word and its last answer', async (t) => {
  t.same(eventTypesOf(' replay.ready,package.issued\n replay.ready  '), ['replay.ready', 'package.issued'])
  t.same(eventTypesOf(''), [])
  t.equal(deliveryText({ status: 'PENDING', responseStatus: null, attempts: [] }), 'PENDING')
  const attempt = { date: '2026-03-01T10:00:00.000Z', durationMs: 3 }
  t.equal(deliveryText({ status: 'RETRYING', responseStatus: 500, attempts: [{ ...attempt, responseStatus: 500, error: null }] }), 'RETRYING (500)')
  t.equal(deliveryText({ status: 'RETRYING', responseStatus: null, attempts: [{ ...attempt, responseStatus: null, error: 'ECONNREFUSED' }] }), 'RETRYING (ECONNREFUSED)')
})

t.test("the replays' kind column: a clip, or a match's angle with its chapters", async (t) => {
  t.equal(kindText({ kind: 'CLIP' }), 'Clip')
  t.equal(kindText({ kind: 'MATCH', match: { id: 'm1' }, chapters: [] }), 'Match m1 angle')
  t.equal(kindText({ kind: 'MATCH', match: { id: 'm1' }, chapters: [{ at: 12, label: 'Replay 19:42' }] }), 'Match m1 angle, 1 chapter')
  t.equal(kindText({ kind: 'MATCH', match: { id: 'm1' }, chapters: [{ at: 12, label: 'a' }, { at: 40, label: 'b' }] }), 'Match m1 angle, 2 chapters')
})
