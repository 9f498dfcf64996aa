// The summary job: the figures of one day in the club's timezone (the day before the run's date),
// from SQL aggregates, kept once per day and mailed once to every admin, as text and HTML.
import { randomUUID } from 'node:crypto'
import { DateTime } from 'luxon'
import type { Summary, SummaryFigures, SummaryListQuery } from '@club/contract'
import { currencyExponent, fromMinor } from '../billing/money.js'
import type { DbOrTx } from '../db/database.js'
import type { OrderKind, OrderStatus, SummariesTable } from '../db/schema.js'
import { escapeMarkup } from '../html.js'
import { pageRequest, paged } from '../paging.js'
import type { JobResult } from './runs.js'
import { count, type ScheduledJobDeps } from './deps.js'
import { sendAllOnce } from './mail.js'

const HOUR_MS = 3_600_000
const SUMMARIES = '/apis/v2/admin/summaries'

/** The local day before `date`, as [start, end) instants and its YYYY-MM-DD name. */
export function summaryDay(date: Date, timezone: string): { day: string; start: string; end: string } {
  const start = DateTime.fromJSDate(date, { zone: timezone }).startOf('day').minus({ days: 1 })
  const end = start.plus({ days: 1 })
  return { day: start.toISODate()!, start: start.toUTC().toISO()!, end: end.toUTC().toISO()! }
}

/** The day's figures; `now` is when "not seen for an hour" is judged. */
async function dayFigures(db: DbOrTx, range: { start: string; end: string }, now: Date, currency: string): Promise<SummaryFigures> {
  const exponent = currencyExponent(currency)
  const orders = async (kinds: OrderKind[], status: OrderStatus) => {
    const row = await db
      .selectFrom('orders')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.coalesce(eb.fn.sum<number>('total_minor'), eb.val(0)).as('minor')])
      .where('kind', 'in', kinds)
      .where('status', '=', status)
      .where('currency', '=', currency)
      .where('created_at', '>=', range.start)
      .where('created_at', '<', range.end)
      .executeTakeFirstOrThrow()
    return { count: Number(row.n), amount: fromMinor(Number(row.minor), exponent) }
  }
  const countOf = async (query: Promise<{ n: number | string | bigint } | undefined>) => Number((await query)?.n ?? 0)
  const newUsers = await countOf(
    db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).where('created_at', '>=', range.start).where('created_at', '<', range.end).executeTakeFirst()
  )
  const cancelledRow = await db
    .selectFrom('membership_subscriptions')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.coalesce(eb.fn.sum<number>('price_minor'), eb.val(0)).as('minor')])
    .where('cancellation_requested_at', '>=', range.start)
    .where('cancellation_requested_at', '<', range.end)
    .where('currency', '=', currency)
    .executeTakeFirstOrThrow()
  // Packages: the packages issue's tables (migration 0013), with this job's own SQL.
  const packagesSold = await countOf(
    db
      .selectFrom('packages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('source', '=', 'PURCHASE')
      .where('created_at', '>=', range.start)
      .where('created_at', '<', range.end)
      .executeTakeFirst()
  )
  const redeemed = await countOf(
    db
      .selectFrom('package_redemptions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('redemption_date', '>=', range.start)
      .where('redemption_date', '<', range.end)
      .where('cancelation_date', 'is', null)
      .executeTakeFirst()
  )
  const pendingApproval = await countOf(db.selectFrom('replay_servers').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'PENDING').executeTakeFirst())
  const anHourAgo = new Date(now.getTime() - HOUR_MS).toISOString()
  const notSeen = await countOf(
    db
      .selectFrom('replay_servers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'APPROVED')
      .where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', anHourAgo)]))
      .executeTakeFirst()
  )
  // Replays requested that day which were delivered (READY then, or EXPIRED since by the cleanup).
  const replaysMade = await countOf(
    db
      .selectFrom('replays')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('created_at', '>=', range.start)
      .where('created_at', '<', range.end)
      .where('status', 'in', ['READY', 'EXPIRED'])
      .executeTakeFirst()
  )
  const failedJobRuns = await countOf(
    db
      .selectFrom('job_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'failed')
      .where('started_at', '>=', range.start)
      .where('started_at', '<', range.end)
      .executeTakeFirst()
  )
  return {
    newUsers,
    memberships: {
      sold: await orders(['MEMBERSHIP'], 'PAID'),
      renewed: await orders(['MEMBERSHIP_RENEWAL'], 'PAID'),
      failed: await orders(['MEMBERSHIP', 'MEMBERSHIP_RENEWAL'], 'FAILED'),
      cancelled: { count: Number(cancelledRow.n), amount: fromMinor(Number(cancelledRow.minor), exponent) }
    },
    packages: { sold: packagesSold, purchaseOrders: await orders(['PURCHASE'], 'PAID'), redeemed },
    recordingBoxes: { pendingApproval, notSeenForAnHour: notSeen },
    replaysMade,
    failedJobRuns
  }
}

/** The lines of a summary, shared by its text and its HTML. */
function lines(f: SummaryFigures, currency: string): Array<[string, string]> {
  const amount = (a: { count: number; amount: number }) => `${a.count} (${a.amount.toFixed(currencyExponent(currency))} ${currency})`
  return [
    ['New users', String(f.newUsers)],
    ['Memberships sold', amount(f.memberships.sold)],
    ['Memberships renewed', amount(f.memberships.renewed)],
    ['Membership charges failed', amount(f.memberships.failed)],
    ['Memberships cancelled', amount(f.memberships.cancelled)],
    ['Packages sold', String(f.packages.sold)],
    ['Product purchases', amount(f.packages.purchaseOrders)],
    ['Package items redeemed', String(f.packages.redeemed)],
    ['Recording boxes awaiting approval', String(f.recordingBoxes.pendingApproval)],
    ['Recording boxes not seen for over an hour', String(f.recordingBoxes.notSeenForAnHour)],
    ['Replays made', String(f.replaysMade)],
    ['Job runs failed', String(f.failedJobRuns)]
  ]
}

function renderSummary(day: string, timezone: string, figures: SummaryFigures, currency: string): { text: string; html: string } {
  const rows = lines(figures, currency)
  const title = `Club summary for ${day} (${timezone})`
  const text = `${title}\n\n${rows.map(([k, v]) => `${k}: ${v}`).join('\n')}\n`
  const html =
    `<!doctype html><html><body><h1>${escapeMarkup(title)}</h1><table>` +
    rows.map(([k, v]) => `<tr><th align="left">${escapeMarkup(k)}</th><td>${escapeMarkup(v)}</td></tr>`).join('') +
    '</table></body></html>'
  return { text, html }
}

export async function runSummary(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db, config } = deps
  const counts: Record<string, number> = {}
  const { day, start, end } = summaryDay(date, config.CLUB_TIMEZONE)
  let summary = await db.selectFrom('summaries').selectAll().where('day', '=', day).executeTakeFirst()
  if (summary) {
    count(counts, 'already_made')
  } else {
    const figures = await dayFigures(db, { start, end }, date, config.CURRENCY)
    const { text, html } = renderSummary(day, config.CLUB_TIMEZONE, figures, config.CURRENCY)
    const row: SummariesTable = { id: randomUUID(), day, timezone: config.CLUB_TIMEZONE, figures: JSON.stringify(figures), text, html, created_at: deps.clock.now().toISOString() }
    const inserted = await db.transaction().execute((tx) => tx.insertInto('summaries').values(row).onConflict((oc) => oc.column('day').doNothing()).executeTakeFirst())
    count(counts, Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1 ? 'made' : 'already_made')
    summary = await db.selectFrom('summaries').selectAll().where('day', '=', day).executeTakeFirstOrThrow()
  }
  const admins = await db.selectFrom('users').select(['id', 'email']).where('role', '=', 'admin').where('erased_at', 'is', null).orderBy('created_at').execute()
  const kept = summary
  await sendAllOnce(
    deps,
    admins.map((admin) => ({
      key: { kind: 'summary', subjectId: admin.id, occurrence: day, recipientId: admin.id },
      message: { to: admin.email, subject: `Club summary for ${day}`, text: kept.text, html: kept.html }
    })),
    counts,
    'mailed'
  )
  return { counts }
}

function toSummary(row: SummariesTable, currency: string): Summary {
  return {
    id: row.id,
    date: row.day,
    timezone: row.timezone,
    currency,
    figures: JSON.parse(row.figures) as SummaryFigures,
    text: row.text,
    html: row.html,
    createdDate: row.created_at,
    _links: { self: { href: `${SUMMARIES}?page=1` } }
  }
}

export async function listSummaries(db: DbOrTx, query: SummaryListQuery, currency: string) {
  const page = pageRequest(query)
  const [rows, total] = await Promise.all([
    db.selectFrom('summaries').selectAll().orderBy('day', 'desc').limit(page.ipp).offset(page.offset).execute(),
    db.selectFrom('summaries').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map((r) => toSummary(r, currency)), Number(total.n), page, SUMMARIES, query)
}
