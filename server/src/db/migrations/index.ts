// Every migration, listed by hand (ESM has no folder scan). Shipped migrations are frozen.
import type { Migration } from 'kysely'
import * as m0001 from './0001_foundation.js'

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001
}
