/** Everything that expires or schedules reads time from a Clock, so tests can move it. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private current: number
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime()
  }
  now(): Date {
    return new Date(this.current)
  }
  advance(ms: number): void {
    this.current += ms
  }
  set(to: Date | string): void {
    this.current = new Date(to).getTime()
  }
}
