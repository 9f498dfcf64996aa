// One session per Firebase verification: two verify calls racing with the same new verificationId
// could otherwise create two sessions, each with its own five attempts. Twilio may hand one
// verification to a resend, so the rule holds for Firebase only.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create unique index phone_verifications_firebase_ref on phone_verifications (provider_ref) where provider = 'firebase'`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index phone_verifications_firebase_ref`.execute(db)
}
