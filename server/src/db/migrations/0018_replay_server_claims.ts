// A box is who it says it is (issue 32): a known deviceId registered again no longer takes over the
// record. It becomes a claim beside it, pending until an admin accepts or rejects it, unless it proves
// possession of the box key (Ed25519) the record holds. The record keeps that public key and the
// timestamp of the last proof it accepted (a proof must be newer: a replayed one is refused).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // Raw Ed25519 public key, base64; null for a box that registered without one.
  await db.schema.alterTable('replay_servers').addColumn('public_key', 'text').execute()
  // ISO timestamp of the last key proof accepted for this record.
  await db.schema.alterTable('replay_servers').addColumn('key_proof_at', 'text').execute()
  await db.schema
    .createTable('replay_server_claims')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('replay_server_id', 'text', (c) => c.notNull().references('replay_servers.id').onDelete('cascade'))
    // SHA-256 of the claim's serverId, which polls PENDING until an admin decides.
    .addColumn('server_id_hash', 'text', (c) => c.notNull().unique())
    // The fingerprint of the key the claim presented, or 'none': one open claim per box and key.
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text')
    // NONE: no proof was sent; REFUSED: one was sent and did not prove the box's key (proof_problem says why).
    .addColumn('proof', 'text', (c) => c.notNull())
    .addColumn('proof_problem', 'text')
    .addColumn('source_ip', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text')
    .addColumn('display_name', 'text')
    .addColumn('version', 'text')
    .addColumn('local_ip', 'text')
    .addColumn('server_url', 'text')
    // How many registrations this claim stands for (a loop updates one row).
    .addColumn('registrations', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('replay_server_claims_box_key', ['replay_server_id', 'key_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('replay_server_claims').execute()
  await db.schema.alterTable('replay_servers').dropColumn('key_proof_at').execute()
  await db.schema.alterTable('replay_servers').dropColumn('public_key').execute()
}
