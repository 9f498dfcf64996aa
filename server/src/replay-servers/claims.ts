// A box is who it says it is: the box key (Ed25519) a record holds, the proof a registration may
// carry of it, and the pending claims a known deviceId registered again without that proof leaves
// beside its record (Mender's "authentication sets": nothing a stranger sends changes a known box).
import { createHash, createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'
import { sql } from 'kysely'
import {
  boxHealthSignatureText,
  boxKeyAdoptionText,
  boxKeyProofText,
  type ReplayServerClaim,
  type ReplayServerRegistrationRequest,
  type ReplayServerStatusQuery
} from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import type { ReplayServerClaimsTable } from '../db/schema.js'
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
  const kept = publicKeys.get(publicKey)
  if (kept) return kept
  const raw = Buffer.from(publicKey, 'base64')
  if (raw.length !== 32 || raw.toString('base64') !== publicKey) {
    throw new BadRequestError(`${field} is not an Ed25519 public key in canonical base64 (32 bytes)`)
  }
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' })
  // Oldest first out: the boxes that poll keep theirs.
  if (publicKeys.size >= PUBLIC_KEYS_KEPT) publicKeys.delete(publicKeys.keys().next().value!)
  publicKeys.set(publicKey, key)
  return key
}

/**
 * Box keys already imported, by their canonical text: importing one cost about 120 µs, as much as
 * verifying a signature with it, on every signed poll (twice on a poll with a health report). Only
 * canonical texts are kept, so a hit needs no check; the keys are public.
 */
const publicKeys = new Map<string, KeyObject>()
const PUBLIC_KEYS_KEPT = 20_000

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

/**
 * Whether the health report of a poll that provesPolledKey is signed by the same key with the same
 * timestamp (healthSignature over boxHealthSignatureText): keySignature alone does not cover it.
 */
export function signsHealth(serverId: string, reported: ReplayServerStatusQuery): boolean {
  const { publicKey, keyTimestamp, healthSignature, health } = reported
  if (publicKey === undefined || keyTimestamp === undefined || healthSignature === undefined || health === undefined) return false
  const text = boxHealthSignatureText({ serverId, timestamp: keyTimestamp, health })
  return verify(null, Buffer.from(text), boxPublicKey(publicKey, 'querystring.publicKey'), Buffer.from(healthSignature, 'base64'))
}

/** Open claims kept per box from one source (see sourceOf): one source alone cannot push the others out. */
export const MAX_CLAIMS_PER_SOURCE = 2

/**
 * The source a claim counts against, from the address a registration came from (pollAddressOf): an
 * IPv6 address by its /64 (one subscriber's whole network: a host there picks any of 2^64 addresses),
 * and every address the server cannot vouch for as one source (under TRUST_PROXY=true the sender
 * writes its own X-Forwarded-For, a new one per request). An IPv4 address is itself.
 */
export function sourceOf(address: string): string {
  if (address.endsWith('(forwarded, not verified)')) return 'forwarded'
  if (isIP(address) !== 6) return address
  // The /64 written out: the first four groups of the expanded address.
  const groups = expandIpv6(address)
  if (groups === null) return address
  return `${groups.slice(0, 4).join(':')}::/64`
}

/** The eight groups of an IPv6 address (an IPv4-mapped tail as two), or null when it is not one. */
function expandIpv6(address: string): string[] | null {
  let text = address.toLowerCase().split('%')[0]!
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const missing = 8 - left.length - right.length
  if (tail === undefined ? missing !== 0 : missing < 1) return null
  return [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right].map((g) => g.replace(/^0+(?=.)/, ''))
}

/** A claim as the caps weigh it: its source, whether it proved a key, how recent it is. */
export interface WeighedClaim {
  id: string
  source: string
  proven: boolean
  updatedAt: string
}

/**
 * Which claims go so that the caps hold after `recorded` (the claim just written) is counted: at most
 * MAX_CLAIMS_PER_SOURCE from its source and MAX_CLAIMS_PER_BOX per box. Claims without a proven key
 * go before those with one, the least recent first; a claim without a proven key never pushes out one
 * with a key (a reinstalled box's proven claim stays, whatever a stranger sends from however many
 * addresses): when only such claims are left to drop, the recorded claim itself goes instead.
 * `others`: the box's other claims. Pure.
 */
export function claimsToDrop(recorded: WeighedClaim, others: readonly WeighedClaim[]): string[] {
  const order = (a: WeighedClaim, b: WeighedClaim) => Number(a.proven) - Number(b.proven) || (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : a.id < b.id ? -1 : 1)
  const dropped = new Set<string>()
  let kept = [...others]
  const cap = (within: WeighedClaim[], max: number) => {
    const excess = within.length + 1 - max
    if (excess <= 0) return true
    const candidates = within.filter((claim) => recorded.proven || !claim.proven).sort(order)
    if (candidates.length < excess) return false
    for (const claim of candidates.slice(0, excess)) dropped.add(claim.id)
    kept = kept.filter((claim) => !dropped.has(claim.id))
    return true
  }
  if (!cap(kept.filter((claim) => claim.source === recorded.source), MAX_CLAIMS_PER_SOURCE) || !cap(kept, MAX_CLAIMS_PER_BOX)) {
    // No room without pushing out a proven claim: the unproven one just recorded goes, and only it.
    return [recorded.id]
  }
  return [...dropped]
}

/**
 * Records a registration that did not prove the box key as a claim beside the record. Its key is
 * kept only when the registration proved it holds it (then one row per box and key); a claim
 * without a proven key is one row per box and source (sourceOf). A repeat replaces the row's
 * serverId, counts, and gives the claim a new id, so an admin's Accept of what they saw before
 * answers 404. The caps then hold (claimsToDrop): the sender of a dropped claim finds its serverId
 * answers 404 and registers again.
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
  const source = sourceOf(sourceIp)
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
      key_id: publicKey === null ? `none:${source}` : keyFingerprint(publicKey),
      registrations: 1,
      created_at: now,
      ...reported
    })
    .onConflict((oc) =>
      oc.columns(['replay_server_id', 'key_id']).doUpdateSet({ ...reported, registrations: sql`replay_server_claims.registrations + 1` })
    )
    .execute()
  // At most MAX_CLAIMS_PER_BOX rows: weighed here, whatever the database.
  const rows = await tx
    .selectFrom('replay_server_claims')
    .select(['id', 'server_id_hash', 'source_ip', 'public_key', 'updated_at'])
    .where('replay_server_id', '=', replayServerId)
    .execute()
  const weighed = rows.map((row) => ({ id: row.id, source: sourceOf(row.source_ip), proven: row.public_key !== null, updatedAt: row.updated_at, serverIdHash: row.server_id_hash }))
  const recorded = weighed.find((claim) => claim.serverIdHash === serverIdHash)!
  const drop = claimsToDrop(recorded, weighed.filter((claim) => claim !== recorded))
  if (drop.length > 0) await tx.deleteFrom('replay_server_claims').where('id', 'in', drop).execute()
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
