// A release of the box's software for tests that set a target version: a row and its file, signed
// with the test's release key (made on first use), as `club agent-releases add` would store them,
// without building a Debian package (the end-to-end tests in test/ build real ones).
import { createHash, createPrivateKey, randomUUID, sign } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { releaseSignedText } from '@club/contract'
import { generateReleaseKey, type ReleaseSettings } from '../agent-releases/service.js'
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
  const bytes = Buffer.from(`club-agent ${version} for ${architecture}\n`)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  const file = `club-agent_${version}_${architecture}.deb`
  mkdirSync(settings.AGENT_RELEASES_DIR, { recursive: true })
  writeFileSync(join(settings.AGENT_RELEASES_DIR, file), bytes)
  const row: AgentReleasesTable = {
    id: randomUUID(),
    version,
    architecture,
    size: bytes.length,
    sha256,
    signature: sign(null, Buffer.from(releaseSignedText({ version, architecture, sha256 })), createPrivateKey(readFileSync(settings.AGENT_RELEASE_KEY_FILE, 'utf8'))).toString('base64'),
    file,
    created_at: createdAt
  }
  await db.insertInto('agent_releases').values(row).execute()
  return row
}
