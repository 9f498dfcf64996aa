// `club regions create` … `club series create`: setting up a venue from a shell. Each prints the
// created resource as the API would answer it.
import { flags, UsageError, type Command } from '../cli/args.js'
import { systemClock } from '../clock.js'
import { createEvent, createSeries } from './events.js'
import { createVenueItem } from './service.js'

const ref = (id: string | undefined) => (id === undefined ? undefined : { id })
const refs = (ids: string[] | undefined) => (ids === undefined ? undefined : { items: ids.map((id) => ({ id })) })
const named = { name: { type: 'string' }, slug: { type: 'string' } } as const

export const venueCommands: Record<string, Command> = {
  async 'regions create'({ db, args }) {
    const { values } = flags(args, named, ['name'])
    return createVenueItem(db, 'regions', { name: values.name!, slug: values.slug }, systemClock)
  },

  async 'areas create'({ db, args }) {
    const { values } = flags(args, { ...named, region: { type: 'string' } }, ['name', 'region'])
    return createVenueItem(db, 'areas', { name: values.name!, slug: values.slug, region: ref(values.region)! }, systemClock)
  },

  async 'pods create'({ db, args }) {
    const { values } = flags(args, { ...named, area: { type: 'string' } }, ['name', 'area'])
    return createVenueItem(db, 'pods', { name: values.name!, slug: values.slug, area: ref(values.area)! }, systemClock)
  },

  async 'courts create'({ db, args }) {
    const { values } = flags(args, { ...named, area: { type: 'string' }, pod: { type: 'string' } }, ['name', 'area'])
    return createVenueItem(db, 'courts', { name: values.name!, slug: values.slug, area: ref(values.area)!, pod: ref(values.pod) }, systemClock)
  },

  async 'events create'({ db, args }) {
    const { values } = flags(
      args,
      {
        name: { type: 'string' },
        type: { type: 'string' },
        subtype: { type: 'string' },
        description: { type: 'string' },
        start: { type: 'string' },
        end: { type: 'string' },
        area: { type: 'string', multiple: true },
        pod: { type: 'string', multiple: true },
        court: { type: 'string', multiple: true },
        tag: { type: 'string', multiple: true },
        series: { type: 'string' }
      },
      ['name', 'type', 'start', 'end']
    )
    return createEvent(
      db,
      {
        name: values.name!,
        type: values.type!,
        subtype: values.subtype,
        description: values.description,
        startDate: isoDate(values.start!, 'start'),
        endDate: isoDate(values.end!, 'end'),
        areas: refs(values.area),
        pods: refs(values.pod),
        courts: refs(values.court),
        tags: values.tag,
        series: ref(values.series)
      },
      systemClock
    )
  },

  async 'series create'({ db, args }) {
    const { values } = flags(
      args,
      { name: { type: 'string' }, type: { type: 'string' }, subtype: { type: 'string' }, description: { type: 'string' } },
      ['name', 'type']
    )
    return createSeries(db, { name: values.name!, type: values.type!, subtype: values.subtype, description: values.description }, systemClock)
  }
}

/** The API takes RFC 3339 date-times; the shell gets the same rule and a clear message. */
function isoDate(value: string, flag: string): string {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UsageError(`--${flag} must be an ISO 8601 date-time with a zone, e.g. 2026-05-04T18:00:00Z; got ${JSON.stringify(value)}`)
  }
  return value
}
