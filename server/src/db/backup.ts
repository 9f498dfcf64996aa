// Backups of the SQLite database: an online copy while the server serves (SQLite's backup API), a
// restore that refuses to run under a live server or to put back a schema this code cannot read,
// and the scheduled backups' folder kept to its size.
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import SQLite from 'better-sqlite3'
import type { Clock } from '../clock.js'
import { dialectOf, sqliteOf, type Db } from './database.js'
import { isPostgresUrl } from './postgres.js'

/** Backups here are copies of a SQLite file; PostgreSQL has its own tools. */
export const POSTGRES_BACKUPS = 'club db backup, club db restore and BACKUP_SCHEDULE copy a SQLite file; on PostgreSQL use pg_dump and pg_restore (or your provider\'s backups)'
import { migrations } from './migrations/index.js'

export class BackupError extends Error {
  override name = 'BackupError'
}

export interface BackupResult {
  file: string
  bytes: number
  migrations: number
}

/** integrity_check and the migrations a database file holds; throws when it is not a sound club database. */
function inspect(file: string): { migrations: string[] } {
  let sqlite: SQLite.Database
  try {
    sqlite = new SQLite(file, { readonly: true, fileMustExist: true })
  } catch (err) {
    throw new BackupError(`${file} cannot be opened: ${err instanceof Error ? err.message : String(err)}`)
  }
  try {
    const integrity = sqlite.pragma('integrity_check', { simple: true })
    if (integrity !== 'ok') throw new BackupError(`${file} fails PRAGMA integrity_check: ${String(integrity)}`)
    const table = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'").get()
    if (!table) throw new BackupError(`${file} is not a club database (it has no migration table)`)
    const names = sqlite.prepare('select name from kysely_migration order by name').pluck().all() as string[]
    return { migrations: names }
  } catch (err) {
    if (err instanceof BackupError) throw err
    throw new BackupError(`${file} is not a readable SQLite database: ${err instanceof Error ? err.message : String(err)}`)
  } finally {
    sqlite.close()
  }
}

/** Refuses a BACKUP_SCHEDULE at start on PostgreSQL, rather than failing at every scheduled time. */
export function checkScheduledBackups(db: Db): void {
  if (dialectOf(db) === 'postgres') throw new Error(`BACKUP_SCHEDULE is set: ${POSTGRES_BACKUPS}`)
}

/**
 * Copies the open database into `file` with SQLite's online backup: readers and writers carry on,
 * and the copy is one consistent state that holds every transaction committed before it began (a
 * commit by another process during the copy makes SQLite start over, so the copy is never a mix).
 * Written beside the target first and renamed, so a half-written file never bears the name.
 */
export async function backupDatabase(db: Db, file: string): Promise<BackupResult> {
  if (dialectOf(db) === 'postgres') throw new BackupError(POSTGRES_BACKUPS)
  if (existsSync(file)) throw new BackupError(`${file} already exists: name a new file`)
  mkdirSync(dirname(file) || '.', { recursive: true })
  const partial = `${file}.partial`
  rmSync(partial, { force: true })
  try {
    // Large steps: fewer turns of the event loop between them, so fewer chances for a commit by
    // another process to restart the copy during a write burst.
    await sqliteOf(db).backup(partial, { progress: () => 2000 })
    // The copy inherits WAL mode; a rollback journal makes it one self-contained file to move around.
    const copy = new SQLite(partial)
    copy.pragma('journal_mode = DELETE')
    copy.close()
    const { migrations: applied } = inspect(partial)
    renameSync(partial, file)
    return { file, bytes: statSync(file).size, migrations: applied.length }
  } catch (err) {
    rmSync(partial, { force: true })
    throw err
  }
}

/**
 * Whether any connection has the database open. In WAL mode every connection holds a shared lock
 * on the file while open, even idle; a connection in exclusive locking mode needs all of them gone.
 */
function refuseWhileInUse(target: string): void {
  const probe = new SQLite(target, { timeout: 0, fileMustExist: true })
  try {
    probe.pragma('locking_mode = EXCLUSIVE')
    probe.exec('BEGIN EXCLUSIVE')
    probe.exec('COMMIT')
    // Fold the write-ahead log into the file, so the copy kept aside below is whole.
    probe.pragma('wal_checkpoint(TRUNCATE)')
  } catch (err) {
    const code = (err as { code?: string }).code ?? ''
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      throw new BackupError(`${target} is in use (a running server or club command has it open): stop the server first`)
    }
    throw err
  } finally {
    probe.close()
  }
}

export interface RestoreResult {
  restored: string
  from: string
  /** Where the database that was replaced was kept; null when there was none. */
  previous: string | null
  migrations: number
}

/**
 * Puts a backup in place of `target` while nothing has it open. Refuses a backup whose schema is
 * newer than this code (migrations it does not know): the server would refuse to start on it, or
 * worse, misread it. The database it replaces is kept beside it as `<name>.before-restore-<time>`.
 */
export function restoreDatabase(target: string, backupFile: string, clock: Clock): RestoreResult {
  if (isPostgresUrl(target)) throw new BackupError(POSTGRES_BACKUPS)
  if (!existsSync(backupFile)) throw new BackupError(`${backupFile} does not exist`)
  const { migrations: held } = inspect(backupFile)
  const known = new Set(Object.keys(migrations))
  const unknown = held.filter((name) => !known.has(name))
  if (unknown.length > 0) {
    throw new BackupError(`${backupFile} has a newer schema than this code (migrations ${unknown.join(', ')}): restore it with the version that made it`)
  }
  mkdirSync(dirname(target) || '.', { recursive: true })
  let previous: string | null = null
  if (existsSync(target)) {
    refuseWhileInUse(target)
    previous = `${target}.before-restore-${clock.now().toISOString().replace(/[:.]/g, '-')}`
    renameSync(target, previous)
  }
  // Left by no one now that every connection is closed; a stale log must never meet the new file.
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true })
  const incoming = `${target}.restoring`
  copyFileSync(backupFile, incoming)
  renameSync(incoming, target)
  return { restored: target, from: backupFile, previous, migrations: held.length }
}

/** A scheduled backup's name: sorts by time. */
const SCHEDULED = /^club-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z\.db$/

/** Takes one scheduled backup into `dir` and deletes the oldest beyond `keep`; answers the new file and those deleted. */
export async function takeScheduledBackup(db: Db, options: { dir: string; keep: number; clock: Clock }): Promise<{ file: string; deleted: string[] }> {
  const file = join(options.dir, `club-${options.clock.now().toISOString().replace(/[:.]/g, '-')}.db`)
  await backupDatabase(db, file)
  const ours = readdirSync(options.dir).filter((name) => SCHEDULED.test(name)).sort()
  const deleted = ours.slice(0, Math.max(0, ours.length - options.keep)).map((name) => join(options.dir, name))
  for (const old of deleted) rmSync(old, { force: true })
  return { file, deleted: deleted.map((f) => basename(f)) }
}
