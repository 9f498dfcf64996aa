// When what a redemption paid for was delivered (issue 47): a replay's item is spent from the moment
// the replay was READY, whatever becomes of the replay afterwards (deleted by its member, taken down,
// expired). Kept on the redemption, which outlives the replay's row, rather than read from the replay.
// Redemptions whose replay is READY, EXPIRED or TAKEN_DOWN and not cancelled were delivered: marked
// with the replay's last change. Those whose replay was deleted already cannot be told apart.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('package_redemptions').addColumn('delivered_at', 'text').execute()
  await sql`update package_redemptions set delivered_at = (
      select min(replays.updated_at) from replays where replays.redemption_id = package_redemptions.id
    )
    where cancelation_date is null and exists (
      select 1 from replays where replays.redemption_id = package_redemptions.id and replays.status in ('READY', 'EXPIRED', 'TAKEN_DOWN')
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('package_redemptions').dropColumn('delivered_at').execute()
}
