// The reminder job: members whose membership renews within REMINDER_RENEWAL_DAYS, whose pause ends
// within 3 days, and whose package expires within REMINDER_PACKAGE_DAYS with items left, each told
// once per renewal date, pause or package expiry (jobs/mail.ts).
import { DAY_MS } from '../instants.js'
import type { MailMessage } from '../password-reset/mailer.js'
import type { JobResult } from './runs.js'
import type { ScheduledJobDeps } from './deps.js'
import { localDay, money, sendAllOnce, type OnceKey } from './mail.js'

/** A pause is announced this many days before it ends (the issue fixes it; no setting). */
const PAUSE_END_REMINDER_DAYS = 3

const greeting = (firstName: string | null) => (firstName ? `Hello ${firstName},` : 'Hello,')

export async function runReminders(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db, config } = deps
  const at = date.toISOString()
  const within = (days: number) => new Date(date.getTime() + days * DAY_MS).toISOString()
  const tz = config.CLUB_TIMEZONE
  const counts: Record<string, number> = {}
  const mails: Array<{ key: OnceKey; message: MailMessage; outcome: string }> = []

  const renewals = await db
    .selectFrom('membership_subscriptions as s')
    .innerJoin('users as u', 'u.id', 's.member_id')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .select(['s.id', 's.next_charge_date', 's.member_id', 's.price_minor', 's.currency', 'u.email', 'u.first_name', 'm.display_name'])
    .where('s.status', '=', 'CONFIRMED')
    .where('s.condition', '=', 'VALID')
    .where('s.charge_type', 'in', ['MONTHLY', 'SIX_MONTHS', 'YEARLY'])
    .where('s.cancellation_requested_at', 'is', null)
    .where((eb) => eb.or([eb('s.end_date', 'is', null), eb('s.end_date', '>', at)]))
    .where('s.next_charge_date', '>', at)
    .where('s.next_charge_date', '<=', within(config.REMINDER_RENEWAL_DAYS))
    .where('u.erased_at', 'is', null)
    .orderBy('s.next_charge_date')
    .execute()
  for (const r of renewals) {
    mails.push({
      outcome: 'renewal',
      key: { kind: 'reminder-renewal', subjectId: r.id, occurrence: r.next_charge_date!, recipientId: r.member_id },
      message: {
        to: r.email,
        subject: `Your ${r.display_name} membership renews on ${localDay(r.next_charge_date!, tz)}`,
        text: `${greeting(r.first_name)}\n\nYour ${r.display_name} membership renews on ${localDay(r.next_charge_date!, tz)}, when ${money(r.price_minor, r.currency)} will be charged to your saved payment method.\nTo stop it, cancel before then.\n`
      }
    })
  }

  const pauses = await db
    .selectFrom('membership_pauses as p')
    .innerJoin('membership_subscriptions as s', 's.id', 'p.subscription_id')
    .innerJoin('users as u', 'u.id', 's.member_id')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .select(['p.id', 'p.end_date', 's.member_id', 'u.email', 'u.first_name', 'm.display_name'])
    .where('p.cancelled_at', 'is', null)
    .where('p.start_date', '<=', at)
    .where('p.end_date', '>', at)
    .where('p.end_date', '<=', within(PAUSE_END_REMINDER_DAYS))
    .where('u.erased_at', 'is', null)
    .orderBy('p.end_date')
    .execute()
  for (const p of pauses) {
    mails.push({
      outcome: 'pause_end',
      key: { kind: 'reminder-pause-end', subjectId: p.id, occurrence: p.end_date, recipientId: p.member_id },
      message: {
        to: p.email,
        subject: `Your ${p.display_name} membership resumes on ${localDay(p.end_date, tz)}`,
        text: `${greeting(p.first_name)}\n\nThe pause of your ${p.display_name} membership ends on ${localDay(p.end_date, tz)}; the membership resumes then.\n`
      }
    })
  }

  // Packages: the packages issue's tables (migration 0013), read here with the job's own SQL.
  const packages = await db
    .selectFrom('packages as p')
    .innerJoin('package_items as i', 'i.package_id', 'p.id')
    .innerJoin('users as u', 'u.id', 'p.user_id')
    .select((eb) => ['p.id', 'p.expiration_date', 'p.user_id', 'p.display_name', 'u.email', 'u.first_name', eb.fn.sum<number>('i.remaining_items').as('left')])
    .where('p.status', '=', 'ACTIVE')
    .where('p.expiration_date', '>', at)
    .where('p.expiration_date', '<=', within(config.REMINDER_PACKAGE_DAYS))
    .where('u.erased_at', 'is', null)
    .groupBy(['p.id', 'u.id'])
    .having((eb) => eb.fn.sum('i.remaining_items'), '>', 0)
    .orderBy('p.expiration_date')
    .execute()
  for (const p of packages) {
    mails.push({
      outcome: 'package_expiry',
      key: { kind: 'reminder-package-expiry', subjectId: p.id, occurrence: p.expiration_date, recipientId: p.user_id },
      message: {
        to: p.email,
        subject: `Your ${p.display_name} expires on ${localDay(p.expiration_date, tz)}`,
        text: `${greeting(p.first_name)}\n\nYour ${p.display_name} expires on ${localDay(p.expiration_date, tz)} with ${Number(p.left)} item(s) left. Use them before then.\n`
      }
    })
  }

  let failure: unknown
  for (const outcome of ['renewal', 'pause_end', 'package_expiry']) {
    try {
      await sendAllOnce(deps, mails.filter((m) => m.outcome === outcome), counts, outcome)
    } catch (err) {
      failure ??= err
    }
  }
  if (failure) throw failure
  return { counts }
}
