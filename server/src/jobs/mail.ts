// How the jobs write to people: dates in the club's timezone, amounts in its currency, and each
// message at most once per (kind, subject, occurrence) however often a job runs.
import { DateTime } from 'luxon'
import { currencyExponent, fromMinor } from '../billing/money.js'
import { sendMail, type MailMessage } from '../password-reset/mailer.js'
import { count, type ScheduledJobDeps } from './deps.js'

export function localDay(iso: string, timezone: string): string {
  return DateTime.fromISO(iso, { zone: 'utc' }).setZone(timezone).toFormat('cccc d LLLL yyyy')
}

export function money(minor: number, currency: string): string {
  const exponent = currencyExponent(currency)
  return `${fromMinor(minor, exponent).toFixed(exponent)} ${currency}`
}

export interface OnceKey {
  kind: string
  subjectId: string
  occurrence: string
  recipientId: string
}

/**
 * Sends `message` unless this (kind, subject, occurrence) was sent before. The key is written first,
 * in its own transaction, so two runs at once send once; a failed send takes it back, so the next
 * run tries again. Answers whether this call sent it; a failed send throws.
 */
export async function sendOnce(deps: Pick<ScheduledJobDeps, 'db' | 'clock' | 'mailer'>, key: OnceKey, message: MailMessage): Promise<boolean> {
  const { db, clock } = deps
  const claimed = await db.transaction().execute((tx) =>
    tx
      .insertInto('reminders_sent')
      .values({ kind: key.kind, subject_id: key.subjectId, occurrence: key.occurrence, recipient_id: key.recipientId, sent_at: clock.now().toISOString() })
      .onConflict((oc) => oc.columns(['kind', 'subject_id', 'occurrence']).doNothing())
      .executeTakeFirst()
  )
  if (Number(claimed.numInsertedOrUpdatedRows ?? 0n) !== 1) return false
  try {
    await sendMail(db, deps.mailer(), key.kind, message, clock)
  } catch (err) {
    await db
      .deleteFrom('reminders_sent')
      .where('kind', '=', key.kind)
      .where('subject_id', '=', key.subjectId)
      .where('occurrence', '=', key.occurrence)
      .execute()
    throw err
  }
  return true
}

/** Sends each message once, carrying on past failures; throws at the end when any failed, so the run fails and is retried. */
export async function sendAllOnce(
  deps: ScheduledJobDeps,
  items: Array<{ key: OnceKey; message: MailMessage }>,
  counts: Record<string, number>,
  outcome: string
): Promise<void> {
  const failures: string[] = []
  for (const { key, message } of items) {
    try {
      const sent = await sendOnce(deps, key, message)
      count(counts, sent ? outcome : `${outcome}_already`)
    } catch (err) {
      count(counts, `${outcome}_failed`)
      failures.push(err instanceof Error ? err.message : String(err))
    }
  }
  if (failures.length > 0) throw new Error(`${failures.length} ${outcome} mail(s) not sent, to be retried: ${failures[0]}`)
}
