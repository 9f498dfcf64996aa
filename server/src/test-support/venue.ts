// A small venue for tests: two regions, areas in them, a pod and courts.
import type { Area, Court, Pod, Region } from '@club/contract'
import type { TestApp } from './app.js'
import { createVenueItem } from '../venue/service.js'

export interface TestVenue {
  north: Region
  south: Region
  /** In north. */
  hall: Area
  /** In north. */
  annex: Area
  /** In south. */
  field: Area
  /** In hall. */
  pod: Pod
  /** In hall, pod. */
  court1: Court
  /** In field, no pod. */
  court2: Court
}

export async function testVenue(ctx: TestApp): Promise<TestVenue> {
  const { db } = ctx.app
  const create = <C extends 'regions' | 'areas' | 'pods' | 'courts'>(collection: C, body: Parameters<typeof createVenueItem<C>>[2]) =>
    createVenueItem(db, collection, body, ctx.clock)
  const north = await create('regions', { name: 'North' })
  const south = await create('regions', { name: 'South' })
  const hall = await create('areas', { name: 'Hall', region: { id: north.id } })
  const annex = await create('areas', { name: 'Annex', region: { id: north.id } })
  const field = await create('areas', { name: 'Field', region: { id: south.id } })
  const pod = await create('pods', { name: 'Pod A', area: { id: hall.id } })
  const court1 = await create('courts', { name: 'Court 1', area: { id: hall.id }, pod: { id: pod.id } })
  const court2 = await create('courts', { name: 'Court 2', area: { id: field.id } })
  return { north, south, hall, annex, field, pod, court1, court2 }
}
