// A box is who it says it is: the box key (Ed25519) a record holds, the proof a registration may
// carry of it, and the pending claims a known deviceId registered again without that proof leaves
// beside its record (Mender's "authentication sets": nothing a stranger sends changes a known box).
import { createHash, createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto'
import { sql } from 'kysely'
import { boxKeyProofText, type ReplayServerClaim, type ReplayServerRegistrationRequest } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import type { ReplayServerClaimsTable, ReplayServersTable } from '../db/schema.js'
import { BadRequestError } from '../errors.js'

/** How far a proof's timestamp may be from the server's clock, either way. */
export const KEY_PROOF_WINDOW_MS = 120_000
/** Open claims kept per box: a registration loop with ever new keys replaces the oldest, never adds rows. */
export const MAX_CLAIMS_PER_BOX = 5

/** OpenSSH's form: SHA256: and the unpadded base64 of the SHA-256 of the raw key. */
export function keyFingerprint(publicKey: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(publicKey, 'base64')).digest('base64').replace(/=+$/, '')}`
}

/** The key object of a base64 raw Ed25519 public key, or a 400 naming the field. */
export function boxPublicKey(publicKey: string, field = 'body.publicKey'): KeyObject {
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey, 'base64').toString('base64url') }, format: 'jwk' })
  } catch {
    throw new BadRequestError(`${field} is not an Ed25519 public key`)
  }
}

/** The input checks a schema cannot say: a keyProof needs its publicKey, which must be a usable key. */
export function checkKeyInput(input: ReplayServerRegistrationRequest): void {
  if (input.keyProof && input.publicKey === undefined) throw new BadRequestError('body.keyProof needs body.publicKey, the key that made it')
  if (input.publicKey !== undefined) boxPublicKey(input.publicKey)
}

export type KeyProofVerdict = { proven: true; at: string } | { proven: false; problem: string | null }

/**
 * Whether a registration proves the box key the record holds. `problem` null: no proof was sent.
 * A proof must be made by the record's key, within KEY_PROOF_WINDOW_MS of `now`, and be newer than
 * the last one accepted (the caller's write makes that last check atomic).
 */
export function checkKeyProof(
  record: Pick<ReplayServersTable, 'public_key' | 'key_proof_at'>,
  input: ReplayServerRegistrationRequest,
  now: Date
): KeyProofVerdict {
  const { keyProof, publicKey } = input
  if (!keyProof || publicKey === undefined) return { proven: false, problem: null }
  if (record.public_key === null) return { proven: false, problem: 'the box has no key on record' }
  if (publicKey !== record.public_key) return { proven: false, problem: "signed by another key than the box's" }
  const at = new Date(keyProof.timestamp)
  if (Number.isNaN(at.getTime()) || Math.abs(at.getTime() - now.getTime()) > KEY_PROOF_WINDOW_MS) {
    return { proven: false, problem: `the proof's timestamp is not within ${KEY_PROOF_WINDOW_MS / 1000} s of the server's clock` }
  }
  const text = boxKeyProofText({ deviceId: input.deviceId, publicKey, timestamp: keyProof.timestamp, serverUrl: input.serverUrl })
  if (!verify(null, Buffer.from(text), boxPublicKey(publicKey), Buffer.from(keyProof.signature, 'base64'))) {
    return { proven: false, problem: 'the signature does not verify with the box key' }
  }
  if (record.key_proof_at !== null && at.toISOString() <= record.key_proof_at) return { proven: false, problem: REPLAYED }
  return { proven: true, at: at.toISOString() }
}

export const REPLAYED = 'this proof, or a newer one, was already used'

/**
 * Records a registration that did not prove the box key as a claim beside the record: one row per
 * box and presented key (a repeat replaces its serverId and counts), at most MAX_CLAIMS_PER_BOX,
 * the least recently registered dropped first (its serverId answers 404 and its sender registers again).
 */
export async function recordClaim(
  tx: DbOrTx,
  replayServerId: string,
  serverIdHash: string,
  input: ReplayServerRegistrationRequest,
  verdict: { problem: string | null },
  sourceIp: string,
  now: string
): Promise<void> {
  const reported = {
    server_id_hash: serverIdHash,
    proof: verdict.problem === null ? ('NONE' as const) : ('REFUSED' as const),
    proof_problem: verdict.problem,
    source_ip: sourceIp,
    hostname: input.hostname ?? null,
    display_name: input.displayName ?? null,
    version: input.version ?? null,
    local_ip: input.localIp ?? null,
    server_url: input.serverUrl ?? null,
    updated_at: now
  }
  await tx
    .insertInto('replay_server_claims')
    .values({
      id: randomUUID(),
      replay_server_id: replayServerId,
      key_id: input.publicKey === undefined ? 'none' : keyFingerprint(input.publicKey),
      public_key: input.publicKey ?? null,
      registrations: 1,
      created_at: now,
      ...reported
    })
    .onConflict((oc) =>
      oc.columns(['replay_server_id', 'key_id']).doUpdateSet({ ...reported, registrations: sql`replay_server_claims.registrations + 1` })
    )
    .execute()
  await tx
    .deleteFrom('replay_server_claims')
    .where('replay_server_id', '=', replayServerId)
    .where('id', 'not in', (eb) =>
      eb
        .selectFrom('replay_server_claims')
        .select('id')
        .where('replay_server_id', '=', replayServerId)
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(MAX_CLAIMS_PER_BOX)
    )
    .execute()
}

/** Whether a serverId (by its hash) is a pending claim's: its polls answer PENDING, nothing more. */
export async function isPendingClaim(db: DbOrTx, serverIdHash: string): Promise<boolean> {
  const row = await db.selectFrom('replay_server_claims').select('id').where('server_id_hash', '=', serverIdHash).executeTakeFirst()
  return row !== undefined
}

/** The claims of these records, oldest first, by record id. */
export async function claimsOf(db: DbOrTx, replayServerIds: string[]): Promise<Map<string, ReplayServerClaimsTable[]>> {
  const byBox = new Map<string, ReplayServerClaimsTable[]>()
  if (replayServerIds.length === 0) return byBox
  const rows = await db
    .selectFrom('replay_server_claims')
    .selectAll()
    .where('replay_server_id', 'in', replayServerIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  for (const row of rows) byBox.set(row.replay_server_id, [...(byBox.get(row.replay_server_id) ?? []), row])
  return byBox
}

/** A claim as an admin sees it, beside its box (whose key it may or may not present). Never its serverId. */
export function toReplayServerClaim(row: ReplayServerClaimsTable, boxKey: string | null): ReplayServerClaim {
  return {
    id: row.id,
    sourceIp: row.source_ip,
    keyFingerprint: row.public_key === null ? null : keyFingerprint(row.public_key),
    sameKey: row.public_key !== null && row.public_key === boxKey,
    proof: row.proof,
    proofProblem: row.proof_problem,
    hostname: row.hostname,
    displayName: row.display_name,
    version: row.version,
    localIp: row.local_ip,
    serverUrl: row.server_url,
    registrations: row.registrations,
    createdDate: row.created_at,
    updatedDate: row.updated_at
  }
}
