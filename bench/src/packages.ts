// Packages and products in the benchmark: one package per member, each with a REPLAY item large
// enough never to run out, redeemed over HTTP in turn across the members (each request a target of
// its own, so each takes an item: the write path with its conditional update, order line and
// redemption row); and a catalogue of 20 products the deprecated offering list prices per member.
import { randomUUID } from 'node:crypto'
import type { Db } from '@club/server/db/database'
import { issuePackage } from '@club/server/packages/issue'
import { redeemFromPackage } from '@club/server/packages/redemptions'
import { createProduct } from '@club/server/products/catalogue'
import { createTemplate } from '@club/server/templates/service'
import { load } from './harness.js'
import type { Scenario } from './scenarios.js'

export interface SeededPackages {
  /** Per package: its id and its holder's access token. */
  redeemable: Array<{ id: string; token: string }>
  /** Members' access tokens, for the offering list (each asks for their own). */
  memberTokens: string[]
}

const CATEGORIES = ['POD_SHOP', 'APPAREL', 'EQUIPMENT', 'SERVICES']
const picture = { small: { href: 'https://cdn.example.org/s.png' }, medium: { href: 'https://cdn.example.org/m.png' }, large: { href: 'https://cdn.example.org/l.png' } }

/** A PACKAGE template of 10,000 replays, and one package of it issued to each user: its id and the package ids, in the users' order. */
export async function issueReplayPackages(db: Db, userIds: string[], now: Date): Promise<{ templateId: string; packageIds: string[] }> {
  const data = { validityDays: 3650, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 10_000 }] }
  const template = await createTemplate(db, { name: '10,000 replays', type: 'PACKAGE', status: 'PUBLISHED', data }, { id: userIds[0]! }, { now: () => now })
  const packageIds = await db.transaction().execute(async (tx) => {
    const issued: string[] = []
    for (const userId of userIds) issued.push(await issuePackage(tx, { templateId: template.id, userId, creatorId: null, source: 'STAFF', issuedAt: now, timezone: 'UTC' }))
    return issued
  })
  return { templateId: template.id, packageIds }
}

export async function seedPackages(db: Db, holders: Array<{ userId: string; token: string }>): Promise<SeededPackages> {
  const now = new Date()
  const { templateId, packageIds: ids } = await issueReplayPackages(db, holders.map((h) => h.userId), now)
  // 20 products, 5 per category, VAT on some, so each offering prices a discount and a tax line.
  for (let i = 0; i < 20; i++) {
    await createProduct(
      db,
      {
        sku: `BENCH-${i}`,
        name: `Product ${i}`,
        type: i === 0 ? 'PACKAGE' : 'MERCHANDISE',
        categories: [CATEGORIES[i % CATEGORIES.length]!],
        price: 10 + i * 2.5,
        picture,
        tax: i % 2 === 0 ? { name: 'VAT', percentage: 21, inclusive: false } : null,
        packageTemplate: i === 0 ? { id: templateId } : null
      },
      { clock: { now: () => now }, currency: 'EUR' }
    )
  }
  // One target already redeemed from each package, for the retry scenario: the same request again.
  const deps = { clock: { now: () => new Date() }, clubTimezone: 'UTC', currency: 'EUR', lateCancelHours: 0 }
  for (const [i, id] of ids.entries()) {
    await redeemFromPackage(db, id, RETRIED, { id: holders[i]!.userId, role: 'member' }, deps)
  }
  return { redeemable: ids.map((id, i) => ({ id, token: holders[i]!.token })), memberTokens: holders.map((h) => h.token) }
}

/** The target every package has already paid for (seedPackages): asking again answers that redemption. */
const RETRIED = { type: 'REPLAY' as const, target: { replay: { id: 'bench-redeemed-at-seeding' } } }

/** Each member redeeming from their own package in turn, with the body `body(i)` for request i. */
function redeeming(name: string, seeded: Parameters<Scenario['run']>[1], body: (i: number) => unknown, durationSeconds: number, connections: number, url: string) {
  const redeemable = seeded.packages!.redeemable
  return load({
    name,
    url,
    method: 'POST',
    paths: redeemable.map((p) => `/apis/v2/packages/${p.id}/redemptions`),
    headers: (i) => ({ authorization: `Bearer ${redeemable[i % redeemable.length]!.token}` }),
    jsonBody: body,
    durationSeconds,
    connections
  })
}

export const redemptionScenario: Scenario = {
  name: 'POST packages/{id}/redemptions (Bearer)',
  target: 0.25,
  run: (server, seeded, durationSeconds, connections) => {
    // A new prefix per run: the warm-up, each pair and each repeat redeem targets never seen before.
    const run = randomUUID().slice(0, 8)
    return redeeming('package redemption', seeded, (i) => ({ type: 'REPLAY', target: { replay: { id: `bench-${run}-${i}` } } }), durationSeconds, connections, server.url)
  }
}

/**
 * The same route asked again for a target each package already paid for: everything a redemption
 * does (the request, the credential, the IMMEDIATE transaction, the package, target and retry
 * look-ups, the answer and its log line) but the writes, so the difference from the row above is
 * what the writes cost.
 */
export const redemptionRetryScenario: Scenario = {
  name: 'POST packages/{id}/redemptions (Bearer), a retry: no write',
  run: (server, seeded, durationSeconds, connections) => redeeming('package redemption retried', seeded, () => RETRIED, durationSeconds, connections, server.url)
}

export const offeringListScenario: Scenario = {
  name: 'GET product-offerings (Bearer, deprecated)',
  target: 0.3,
  run: (server, seeded, durationSeconds, connections) => {
    const tokens = seeded.packages!.memberTokens
    return load({
      name: 'product offerings',
      url: server.url,
      paths: ['/apis/v2/product-offerings?category=POD_SHOP&category=APPAREL&category=EQUIPMENT'],
      headers: (i) => ({ authorization: `Bearer ${tokens[i % tokens.length]!}` }),
      durationSeconds,
      connections
    })
  }
}
