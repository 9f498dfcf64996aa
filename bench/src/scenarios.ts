// Scenarios for the areas beyond the foundation (templates, replay servers) and the growth check.
// Filled in as those areas land.
import type { Db } from '@club/server/db/database.js'
import type { Scenario } from './server-bench.js'
import type { SeededUsers } from './seed.js'

export type Seeded = Record<string, unknown>

export async function seedExtra(_db: Db, _scale: number, _users: SeededUsers): Promise<Seeded> {
  return {}
}

export function scenarios(_duration: number, _connections: number): Scenario[] {
  return []
}

export async function growthCheck(_duration: number, _connections: number, _scale: number): Promise<unknown> {
  return null
}
