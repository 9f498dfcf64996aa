// The steps of the box health tests: a health report, and polls signed as the agent signs them,
// carrying one, with the box's clock as far off as the test says.
import { sign } from 'node:crypto'
import type { Test } from 'tap'
import { boxHealthSignatureText, boxKeyAdoptionText, type BoxHealthReport } from '@club/contract'
import type { TestApp } from './app.js'
import { approvedBox, boxKey, type BoxKey } from './box-keys.js'
import { poll } from '../replay-servers/test-helpers.js'

export const report = (cameras: Array<Partial<BoxHealthReport['cameras'][number]> & { id: string }>, disk: Partial<BoxHealthReport['disk']> = {}): BoxHealthReport => ({
  cameras: cameras.map((c) => ({ state: 'RECORDING', lastSegmentAt: '2026-03-01T09:59:50.000Z', restarts: 0, problem: null, ...c })),
  disk: { freeBytes: 500e9, totalBytes: 1000e9, recordingsBytes: 400e9, hoursKept: 300, ...disk },
  temperatureCelsius: 51.5,
  memoryBytes: 80e6,
  uptimeSeconds: 3600
})

let signatures = 0
/**
 * A status query signed as the agent signs it, the signature made `aheadMs` after the server's clock
 * (the box's clock ahead by that much), with the previous round trip and a health report if given.
 */
export function signedHealthQuery(ctx: TestApp, key: BoxKey, serverId: string, options: { health?: unknown; roundTripMs?: number; aheadMs?: number } = {}) {
  // Each signature a millisecond apart (a signed poll is taken once): far below what is measured.
  const timestamp = new Date(ctx.clock.now().getTime() + (options.aheadMs ?? 0) + (signatures++ % 100)).toISOString()
  const keySignature = sign(null, Buffer.from(boxKeyAdoptionText({ serverId, publicKey: key.publicKey, timestamp })), key.privateKey).toString('base64')
  const query = new URLSearchParams({ publicKey: key.publicKey, keyTimestamp: timestamp, keySignature })
  if (options.roundTripMs !== undefined) query.set('roundTripMs', String(options.roundTripMs))
  if (options.health !== undefined) {
    const health = typeof options.health === 'string' ? options.health : JSON.stringify(options.health)
    query.set('health', health)
    query.set('healthSignature', sign(null, Buffer.from(boxHealthSignatureText({ serverId, timestamp, health })), key.privateKey).toString('base64'))
  }
  return query.toString()
}

export async function reportingBox(t: Test, ctx: TestApp) {
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)
  // Past the signed polls made so far (each must be newer than the last).
  ctx.clock.advance(1000)
  const send = async (health: unknown, options: { roundTripMs?: number; aheadMs?: number } = {}) => poll(ctx, box.serverId, signedHealthQuery(ctx, key, box.serverId, { health, ...options }))
  return { ...box, key, send }
}

