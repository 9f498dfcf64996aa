// Identity flows: authorization codes, forum sign-on nonces, password reset tokens, the mail outbox
// and signup phone verification sessions with their sends (for abuse limits).
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('authorization_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text')
    .addColumn('code_challenge_method', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('family_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('authorization_codes_expires_at').on('authorization_codes').column('expires_at').execute()

  await db.schema
    .createTable('forum_connect_nonces')
    .addColumn('nonce_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('forum_connect_nonces_expires_at').on('forum_connect_nonces').column('expires_at').execute()

  await db.schema
    .createTable('password_reset_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('password_reset_tokens_user_id').on('password_reset_tokens').column('user_id').execute()

  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'sent', 'failed')`))
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text')
    .execute()

  await db.schema
    .createTable('phone_verifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('provider_ref', 'text')
    .addColumn('code_hash', 'text')
    .addColumn(
      'status',
      'text',
      (c) => c.notNull().check(sql`status in ('pending', 'approved', 'expired', 'max_attempts_reached', 'canceled')`)
    )
    .addColumn('remaining_attempts', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('phone_verifications_phone').on('phone_verifications').columns(['phone_number', 'status']).execute()
  await db.schema.createIndex('phone_verifications_provider_ref').on('phone_verifications').columns(['provider', 'provider_ref']).execute()

  await db.schema
    .createTable('phone_verification_sends')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('client_ip', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('phone_verification_sends_phone').on('phone_verification_sends').columns(['phone_number', 'created_at']).execute()
  await db.schema.createIndex('phone_verification_sends_ip').on('phone_verification_sends').columns(['client_ip', 'created_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'phone_verification_sends',
    'phone_verifications',
    'mail_outbox',
    'password_reset_tokens',
    'forum_connect_nonces',
    'authorization_codes'
  ]) {
    await db.schema.dropTable(table).execute()
  }
}
