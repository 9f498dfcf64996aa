// What a console page is handed and what it is, apart from main.ts (which imports every page): the
// pages name these types without importing the module that imports them.
import type { User } from '@club/contract'
import type { Session } from './api.js'

export interface Context {
  session: Session
  user: User
  /** Moves to a #/ address. */
  go(hash: string): void
}

/** A page draws itself into `main`; it answers how to stop its timers, if it has any. */
export type PageView = (ctx: Context, main: HTMLElement, id?: string) => void | (() => void)
