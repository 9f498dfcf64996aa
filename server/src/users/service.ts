// Users: accounts with a unique e-mail (compared without case), a scrypt password hash and a role.
import { randomUUID } from 'node:crypto'
import type { EventType, User, UserDeletion, UserRole } from '@club/contract'
import type { Clock } from '../clock.js'
import { hashPassword, verifyPassword } from '../crypto.js'
import { inTransaction, type DbOrTx } from '../db/database.js'
import { recordEvent } from '../events/outbox.js'
import type { UsersTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { DAY_MS } from '../instants.js'

export interface NewUser {
  email: string
  password: string
  role?: UserRole
  firstName?: string | null
  lastName?: string | null
}

export interface PasswordDeps {
  clock: Clock
  passwordHashCost: number
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** E-mail addresses are kept lower-case so that uniqueness and look-ups ignore case. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** NIST 800-63B: length matters, composition rules do not. */
export function checkPasswordPolicy(password: string): void {
  if ([...password].length < 8) throw new BadRequestError('password must be at least 8 characters long')
  if (password.length > 1024) throw new BadRequestError('password must be at most 1024 characters long')
  if (/^(.)\1*$/.test(password)) throw new BadRequestError('password must not be one character repeated')
}

export async function createUser(db: DbOrTx, input: NewUser, deps: PasswordDeps): Promise<UsersTable> {
  const email = normalizeEmail(input.email)
  if (!EMAIL.test(email) || email.length > 320) throw new BadRequestError('email must be an e-mail address')
  checkPasswordPolicy(input.password)
  const existing = await findUserByEmail(db, email)
  if (existing) throw new ConflictError(`a user with email ${quote(email)} already exists`)
  const now = deps.clock.now().toISOString()
  const row: UsersTable = {
    id: randomUUID(),
    email,
    password_hash: await hashPassword(input.password, deps.passwordHashCost),
    first_name: input.firstName ?? null,
    last_name: input.lastName ?? null,
    role: input.role ?? 'member',
    created_at: now,
    updated_at: now,
    deletion_requested_at: null,
    erased_at: null
  }
  try {
    await inTransaction(db, async (tx) => {
      await tx.insertInto('users').values(row).execute()
      await recordUserEvent(tx, row.id, 'user.created', new Date(now))
    })
  } catch (err) {
    // Two creations racing past the look-up meet the unique index instead.
    if (err instanceof Error && /UNIQUE constraint failed: users.email/.test(err.message)) {
      throw new ConflictError(`a user with email ${quote(email)} already exists`)
    }
    throw err
  }
  return row
}

export async function findUserByEmail(db: DbOrTx, email: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst()
}

export async function getUser(db: DbOrTx, id: string): Promise<UsersTable> {
  const user = await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
  if (!user) throw new NotFoundError(`user ${quote(id)} not found`)
  return user
}

// A hash to verify against when the e-mail is unknown, so that a wrong address costs as much time
// as a wrong password and the answer's timing does not tell which addresses exist.
const dummyHashes = new Map<number, Promise<string>>()

/** The user whose e-mail and password these are, or undefined. Takes the same time either way. */
export async function checkCredentials(
  db: DbOrTx,
  email: string,
  password: string,
  deps: PasswordDeps
): Promise<UsersTable | undefined> {
  const user = await findUserByEmail(db, email)
  if (!user) {
    let dummy = dummyHashes.get(deps.passwordHashCost)
    if (!dummy) dummyHashes.set(deps.passwordHashCost, (dummy = hashPassword('not a password', deps.passwordHashCost)))
    await verifyPassword(password, await dummy)
    return undefined
  }
  return (await verifyPassword(password, user.password_hash)) ? user : undefined
}

/** A user as the rest of the server passes it around (no password hash). */
export interface UserRecord {
  id: string
  email: string
  role: UserRole
  firstName: string | null
  lastName: string | null
  createdDate: string
}

export function userRecord(row: Pick<UsersTable, 'id' | 'email' | 'role' | 'first_name' | 'last_name' | 'created_at'>): UserRecord {
  return { id: row.id, email: row.email, role: row.role, firstName: row.first_name, lastName: row.last_name, createdDate: row.created_at }
}

export function toUser(user: UserRecord, self = '/apis/v2/users/current'): User {
  return { ...user, _links: { self: { href: self } } }
}

/** A user event with the user as GET users/current answers it (after an erasure: nothing personal left), in the change's transaction. */
export async function recordUserEvent(tx: DbOrTx, userId: string, type: Extract<EventType, `user.${string}`>, now: Date): Promise<User> {
  const row = await tx.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow()
  const user = toUser(userRecord(row))
  await recordEvent(tx, { type, resourceId: userId, data: user }, now)
  return user
}

// Account erasure (issue 14): asked for now, carried out by the users-cleanup job after the grace period.
export async function requestUserDeletion(db: DbOrTx, userId: string, clock: Clock, graceDays: number): Promise<UserDeletion> {
  const now = clock.now().toISOString()
  // Asking again keeps the first date: the grace period does not restart.
  await db.updateTable('users').set({ deletion_requested_at: now, updated_at: now }).where('id', '=', userId).where('deletion_requested_at', 'is', null).execute()
  const row = await db.selectFrom('users').select('deletion_requested_at').where('id', '=', userId).executeTakeFirstOrThrow()
  const requested = row.deletion_requested_at!
  return {
    id: userId,
    deletionRequestedDate: requested,
    deletionDate: new Date(Date.parse(requested) + graceDays * DAY_MS).toISOString(),
    _links: { self: { href: '/apis/v2/users/current' } }
  }
}
