// Who is asking, as the rules of member-facing resources see it: a member acts for themself, staff
// and admins for anyone.
import type { UserRole } from '@club/contract'

export interface Actor {
  id: string
  role: UserRole
}

export const isStaff = (actor: Actor): boolean => actor.role === 'staff' || actor.role === 'admin'
