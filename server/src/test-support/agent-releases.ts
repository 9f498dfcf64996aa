// Releases of the box's software for tests: the test run's own release key (its public half is what
// testConfig trusts), signatures made with it as `club agent-releases sign` makes them, and a row
// with its file stored as `club agent-releases add` stores them, without building a Debian package
// (the end-to-end tests in test/ build real ones).
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { releaseSignedText } from '@club/contract'
import { settingOf } from '../agent-releases/keys.js'
import { storeReleaseFile, type ReleaseSettings } from '../agent-releases/service.js'
import type { Db } from '../db/database.js'
import type { AgentReleasesTable } from '../db/schema.js'

/** The release key of this test run, made once; testConfig trusts its public half. */
export const testReleaseKey = generateKeyPairSync('ed25519')

/** AGENT_RELEASE_PUBLIC_KEYS trusting `keys` (the test key by default). */
export const trustedKeysSetting = (...keys: KeyObject[]) => (keys.length ? keys : [testReleaseKey.publicKey]).map(settingOf).join(',')

/** A release's signature by `privateKey` (the test key by default), as the box checks it. */
export function releaseSignature(release: { version: string; architecture: string; sha256: string }, privateKey = testReleaseKey.privateKey): string {
  return sign(null, Buffer.from(releaseSignedText(release)), privateKey).toString('base64')
}

/** Stores `version` for `architecture` (`all`: every box), signed with the test key; answers its row. */
export async function storeRelease(
  db: Db,
  settings: ReleaseSettings,
  version: string,
  architecture = 'all',
  createdAt = '2026-03-01T09:00:00.000Z'
): Promise<AgentReleasesTable> {
  mkdirSync(settings.AGENT_RELEASES_DIR, { recursive: true })
  const staged = join(settings.AGENT_RELEASES_DIR, `.test-${version}-${architecture}.tmp`)
  const bytes = Buffer.from(`club-agent ${version} for ${architecture}\n`)
  writeFileSync(staged, bytes)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  return storeReleaseFile(db, settings, staged, { version, architecture, signature: releaseSignature({ version, architecture, sha256 }) }, createdAt)
}
