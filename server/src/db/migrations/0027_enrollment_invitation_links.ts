// The invitation mail's link: each invitation the owner sends carries a random single-use token,
// stored here only as its SHA-256 hash (null for invitations mailed before links, and for staff's
// direct enrolments). The token answers its own invitation only, and only while it is INVITED.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('membership_enrollments').addColumn('invitation_token_hash', 'text').execute()
  await db.schema.createIndex('membership_enrollments_invitation_token').unique().on('membership_enrollments').column('invitation_token_hash').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('membership_enrollments_invitation_token').execute()
  await db.schema.alterTable('membership_enrollments').dropColumn('invitation_token_hash').execute()
}
