// A release of the box's software for tests that set a target version: a row and its file, signed
// with the test's release key (made on first use), stored as `club agent-releases add` stores them,
// without building a Debian package (the end-to-end tests in test/ build real ones).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateReleaseKey, storeReleaseFile, type ReleaseSettings } from '../agent-releases/service.js'
import type { Db } from '../db/database.js'
import type { AgentReleasesTable } from '../db/schema.js'

/** Stores `version` for `architecture` (`all`: every box); answers its row. */
export async function storeRelease(
  db: Db,
  settings: ReleaseSettings,
  version: string,
  architecture = 'all',
  createdAt = '2026-03-01T09:00:00.000Z'
): Promise<AgentReleasesTable> {
  if (!existsSync(settings.AGENT_RELEASE_KEY_FILE)) generateReleaseKey(settings)
  mkdirSync(settings.AGENT_RELEASES_DIR, { recursive: true })
  const staged = join(settings.AGENT_RELEASES_DIR, `.test-${version}-${architecture}.tmp`)
  writeFileSync(staged, `club-agent ${version} for ${architecture}\n`)
  return storeReleaseFile(db, settings, staged, { version, architecture }, createdAt)
}
