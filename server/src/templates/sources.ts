// What a template made from an event or a series holds: pure functions of the source's rows.
import type { EventsTable, SeriesTable } from '../db/schema.js'
import type { EventPlaces } from '../venue/events.js'

const DAYS = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY']
const DAY_MS = 24 * 3600 * 1000

function durationMinutes(event: Pick<EventsTable, 'start_at' | 'end_at'>): number {
  return Math.round((Date.parse(event.end_at) - Date.parse(event.start_at)) / 60000)
}

export function eventTemplateData(event: EventsTable): Record<string, unknown> {
  return {
    type: event.type,
    subtype: event.subtype,
    description: event.description,
    durationMinutes: durationMinutes(event),
    tags: JSON.parse(event.tags) as string[],
    event: { id: event.id }
  }
}

/**
 * When a series' events happen, in UTC: weekdays and start times in use, and the number of days
 * between consecutive starts when it is always the same whole number (null otherwise).
 */
export function schedulePattern(events: Array<Pick<EventsTable, 'start_at' | 'end_at'>>) {
  const starts = events.map((e) => new Date(e.start_at)).sort((a, b) => a.getTime() - b.getTime())
  const gaps = starts.slice(1).map((s, i) => s.getTime() - starts[i]!.getTime())
  const regular = gaps.length > 0 && gaps.every((g) => g === gaps[0] && g % DAY_MS === 0)
  const unique = <T>(values: T[]) => [...new Set(values)]
  return {
    occurrences: starts.length,
    firstStart: starts[0]?.toISOString() ?? null,
    lastStart: starts.at(-1)?.toISOString() ?? null,
    daysOfWeek: unique(starts.map((s) => s.getUTCDay()))
      .sort()
      .map((d) => DAYS[d]),
    startTimes: unique(starts.map((s) => s.toISOString().slice(11, 16))).sort(),
    intervalDays: regular ? gaps[0]! / DAY_MS : null
  }
}

/** A series' content: its own type, subtype and description; its events' duration, tags and schedule. */
export function seriesTemplateData(series: SeriesTable, events: EventsTable[]): Record<string, unknown> {
  const durations = [...new Set(events.map(durationMinutes))]
  return {
    type: series.type,
    subtype: series.subtype,
    description: series.description,
    // The events' common duration; when they differ, the first one's.
    durationMinutes: durations[0] ?? null,
    tags: [...new Set(events.flatMap((e) => JSON.parse(e.tags) as string[]))],
    schedule: schedulePattern(events),
    series: { id: series.id }
  }
}

/** The places of all of a series' events, each once, in the events' order. */
export function unionPlaces(all: EventPlaces[]): EventPlaces {
  const union = (key: keyof EventPlaces) => [...new Set(all.flatMap((p) => p[key]))]
  return { areas: union('areas'), pods: union('pods'), courts: union('courts') }
}
