// A box is who it says it is: the box key (Ed25519) a record holds, the proof a registration may
// carry of it, and the pending claims a known deviceId registered again without that proof leaves
// beside its record (Mender's "authentication sets": nothing a stranger sends changes a known box).
import { createHash, createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto'
import { sql, type ExpressionBuilder } from 'kysely'
import {
  boxKeyAdoptionText,
  boxKeyProofText,
  type ReplayServerClaim,
  type ReplayServerRegistrationRequest,
  type ReplayServerStatusQuery
} from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import type { Database, ReplayServerClaimsTable } from '../db/schema.js'
import { BadRequestError } from '../errors.js'

/** How far a proof's timestamp may be from the server's clock, either way. */
export const KEY_PROOF_WINDOW_MS = 120_000
/** Open claims kept per box: a registration loop with ever new keys replaces the oldest, never adds rows. */
export const MAX_CLAIMS_PER_BOX = 5

/** OpenSSH's form: SHA256: and the unpadded base64 of the SHA-256 of the raw key. */
export function keyFingerprint(publicKey: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(publicKey, 'base64')).digest('base64').replace(/=+$/, '')}`
}

/**
 * The key object of a base64 raw Ed25519 public key, or a 400 naming the field. Only the canonical
 * encoding is accepted: Node's decoder ignores the unused low bits of the last character, so four
 * texts name the same 32 bytes, and the stored text (which records compare) must name one key.
 */
export function boxPublicKey(publicKey: string, field = 'body.publicKey'): KeyObject {
  const raw = Buffer.from(publicKey, 'base64')
  if (raw.length !== 32 || raw.toString('base64') !== publicKey) {
    throw new BadRequestError(`${field} is not an Ed25519 public key in canonical base64 (32 bytes)`)
  }
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' })
}

/** The input checks a schema cannot say: a keyProof needs its publicKey, which must be a usable key. */
export function checkKeyInput(input: ReplayServerRegistrationRequest): void {
  if (input.keyProof && input.publicKey === undefined) throw new BadRequestError('body.keyProof needs body.publicKey, the key that made it')
  if (input.publicKey !== undefined) boxPublicKey(input.publicKey)
}

/** `problem` null: no proof was sent. */
export type KeyProofVerdict = { proven: true; at: string } | { proven: false; problem: string | null }

const outOfWindow = (timestamp: string, now: Date): boolean => {
  const at = new Date(timestamp).getTime()
  return Number.isNaN(at) || Math.abs(at - now.getTime()) > KEY_PROOF_WINDOW_MS
}

export const STALE = `the proof's timestamp is not within ${KEY_PROOF_WINDOW_MS / 1000} s of the server's clock: set the box's clock (NTP)`
export const BAD_SIGNATURE = "the signature does not verify with the key sent (signed for another deviceId, serverUrl or server? A box registers at this server's PUBLIC_BASE_URL)"
export const REPLAYED = 'this proof, or a newer one, was already used'

/**
 * Whether a registration's keyProof was made by the publicKey it sends, for this server (`audience`,
 * its origin), within KEY_PROOF_WINDOW_MS of `now`. Says nothing of the record: whether that key is
 * the box's, and whether the proof is newer than the last one accepted, is the caller's to decide.
 */
export function checkKeyProof(input: ReplayServerRegistrationRequest, audience: string, now: Date): KeyProofVerdict {
  const { keyProof, publicKey } = input
  if (!keyProof || publicKey === undefined) return { proven: false, problem: null }
  if (outOfWindow(keyProof.timestamp, now)) return { proven: false, problem: STALE }
  const text = boxKeyProofText({ deviceId: input.deviceId, publicKey, timestamp: keyProof.timestamp, serverUrl: input.serverUrl, audience })
  if (!verify(null, Buffer.from(text), boxPublicKey(publicKey), Buffer.from(keyProof.signature, 'base64'))) {
    return { proven: false, problem: BAD_SIGNATURE }
  }
  return { proven: true, at: new Date(keyProof.timestamp).toISOString() }
}

/**
 * Whether a status poll proves the key it reports (a record without a key adopts only such a key):
 * a signature by that key of boxKeyAdoptionText over the poll's own serverId, made within
 * KEY_PROOF_WINDOW_MS of `now`. The serverId is the poll's bearer secret; the signature shows the
 * key's holder is the one polling with it.
 */
export function provesPolledKey(serverId: string, reported: ReplayServerStatusQuery, now: Date): boolean {
  const { publicKey, keyTimestamp, keySignature } = reported
  if (publicKey === undefined || keyTimestamp === undefined || keySignature === undefined) return false
  if (outOfWindow(keyTimestamp, now)) return false
  const text = boxKeyAdoptionText({ serverId, publicKey, timestamp: keyTimestamp })
  return verify(null, Buffer.from(text), boxPublicKey(publicKey, 'querystring.publicKey'), Buffer.from(keySignature, 'base64'))
}

/** Open claims kept per box from one source address: one address alone cannot push the others out. */
export const MAX_CLAIMS_PER_SOURCE = 2

/**
 * Records a registration that did not prove the box key as a claim beside the record. Its key is
 * kept only when the registration proved it holds it (then one row per box and key); a claim
 * without a proven key is one row per box and source address. A repeat replaces the row's serverId,
 * counts, and gives the claim a new id, so an admin's Accept of what they saw before answers 404.
 * At most MAX_CLAIMS_PER_SOURCE per source address and MAX_CLAIMS_PER_BOX per box are kept: the
 * least recent go first, claims without a proven key before those with one (the sender of a dropped
 * claim finds its serverId answers 404 and registers again).
 */
export async function recordClaim(
  tx: DbOrTx,
  replayServerId: string,
  serverIdHash: string,
  input: ReplayServerRegistrationRequest,
  verdict: KeyProofVerdict,
  sourceIp: string,
  now: string
): Promise<void> {
  const publicKey = verdict.proven ? input.publicKey! : null
  const reported = {
    id: randomUUID(),
    server_id_hash: serverIdHash,
    public_key: publicKey,
    proof: verdict.proven ? ('PROVEN' as const) : verdict.problem === null ? ('NONE' as const) : ('REFUSED' as const),
    proof_problem: verdict.proven ? null : verdict.problem,
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
      replay_server_id: replayServerId,
      key_id: publicKey === null ? `none:${sourceIp}` : keyFingerprint(publicKey),
      registrations: 1,
      created_at: now,
      ...reported
    })
    .onConflict((oc) =>
      oc.columns(['replay_server_id', 'key_id']).doUpdateSet({ ...reported, registrations: sql`replay_server_claims.registrations + 1` })
    )
    .execute()
  // The claim just recorded always stays; of the others, the most recent (proven keys first) fill the rest.
  const others = (eb: ExpressionBuilder<Database, 'replay_server_claims'>) =>
    eb.and([eb('replay_server_id', '=', replayServerId), eb('server_id_hash', '<>', serverIdHash)])
  await tx
    .deleteFrom('replay_server_claims')
    .where(others)
    .where('source_ip', '=', sourceIp)
    .where('id', 'not in', (eb) =>
      eb
        .selectFrom('replay_server_claims')
        .select('id')
        .where(others)
        .where('source_ip', '=', sourceIp)
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(MAX_CLAIMS_PER_SOURCE - 1)
    )
    .execute()
  await tx
    .deleteFrom('replay_server_claims')
    .where(others)
    .where('id', 'not in', (eb) =>
      eb
        .selectFrom('replay_server_claims')
        .select('id')
        .where(others)
        .orderBy(sql`public_key is null`)
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(MAX_CLAIMS_PER_BOX - 1)
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
