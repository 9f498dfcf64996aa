/** Everything that expires or counts over time reads a Clock, so tests move time instead of sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private current: number
  constructor(start: Date | string = '2026-03-01T10:00:00.000Z') {
    this.current = new Date(start).getTime()
  }
  now(): Date {
    return new Date(this.current)
  }
  advance(ms: number): void {
    this.current += ms
  }
}
