// The agent's side of an update handing a checked package to the installer through updateCommand (a
// real shell command here): the version reaches it as "$1", and a command that fails (systemctl or
// polkit refusing) leaves FAILED with its reason instead of INSTALLING forever.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { PendingUpdate } from '@club/contract'
import { ManualClock } from '../clock.js'
import { createLogger } from '../log.js'
import { updateFiles } from './decide.js'
import { UpdateFiles } from './files.js'
import { runUpdateCommand, Updater } from './updater.js'

const pending: PendingUpdate = {
  version: '1.1.0',
  release: { version: '1.1.0', architecture: 'all', path: '/p/1.1.0', size: 15, sha256: 'a'.repeat(64), signature: 's' }
}

/** A box running 1.0.0 whose package of 1.1.0 is downloaded and checked, with `updateCommand`. */
function boxWith(t: { teardown(fn: () => void): void }, updateCommand: string) {
  const stateDir = mkdtempSync(join(tmpdir(), 'club-updater-'))
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const files = new UpdateFiles(stateDir)
  files.ensureDir()
  writeFileSync(files.path(updateFiles.complete('1.1.0')), 'checked package')
  const log = createLogger('silent')
  const updater = new Updater({
    stateDir,
    running: '1.0.0',
    baseUrl: () => 'http://127.0.0.1:9',
    accessToken: () => 'token',
    releaseKeyPath: join(stateDir, 'release-key.pem'),
    exportsRunning: () => 0,
    trigger: (version) => runUpdateCommand(updateCommand.replaceAll('STATE', stateDir), version, log),
    clock: new ManualClock(),
    log,
    timeoutMs: 1000
  })
  return { stateDir, files, updater }
}

t.test('the installer is started with the version as "$1" and the box reports INSTALLING', async (t) => {
  const { stateDir, files, updater } = boxWith(t, 'printf "%s\\n" "$1" >> STATE/started')
  await updater.onPending(pending)
  t.same(updater.report(), { updateState: 'INSTALLING', updateVersion: '1.1.0' })
  t.equal(readFileSync(join(stateDir, 'started'), 'utf8'), '1.1.0\n')
  t.match(files.request(), { release: { version: '1.1.0' } }, 'the request the installer reads')
  await updater.onPending(pending)
  t.equal(readFileSync(join(stateDir, 'started'), 'utf8'), '1.1.0\n', 'not started twice')
})

t.test('an installer that cannot be started: FAILED with the first line the command wrote, not tried again', async (t) => {
  const { stateDir, updater } = boxWith(t, 'echo x >> STATE/tries; echo "Interactive authentication required." >&2; echo "See system logs." >&2; exit 4')
  await updater.onPending(pending)
  t.same(updater.report(), { updateState: 'FAILED', updateVersion: '1.1.0', updateReason: 'the installer did not start: Interactive authentication required.' })
  await updater.onPending(pending)
  t.equal(readFileSync(join(stateDir, 'tries'), 'utf8'), 'x\n', 'a version that failed waits for another target')
})

t.test('a command that fails silently is reported with its exit code', async (t) => {
  const { updater } = boxWith(t, 'exit 3')
  await updater.onPending(pending)
  t.match(updater.report(), { updateState: 'FAILED', updateReason: 'the installer did not start: the update command exited with 3' })
})
