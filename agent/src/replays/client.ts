// The box's calls about replays to the server (its device routes, with its access token), at the
// configuration's apiBaseUrl or else the server it registered with.
import { DeviceReplay, DeviceReplayCollection, footageTakedownDeviceRoutes, replayDeviceRoutes, type DeviceReplayStatusChange } from '@club/contract'
import Type from 'typebox'
import { Value } from 'typebox/value'
import { ServerUnavailableError, answerOf, serverCall } from '../control/client.js'

const OlderDeviceReplays = Type.Array(DeviceReplay)

export interface ReplayClientOptions {
  baseUrl: () => string
  accessToken: () => string | undefined
  timeoutMs: number
}

export class ReplayClient {
  constructor(private readonly options: ReplayClientOptions) {}

  async waiting(): Promise<DeviceReplay[]> {
    const json = clipsUnlessSaid(await this.call('GET', replayDeviceRoutes.list.url))
    if (Value.Check(DeviceReplayCollection, json)) return json.items
    // A server from before the collection shape answered the bare array: a box updated first keeps working.
    if (Value.Check(OlderDeviceReplays, json)) return json
    throw new ServerUnavailableError('the waiting replays do not match the contract')
  }

  async report(id: string, change: DeviceReplayStatusChange): Promise<void> {
    await this.call('PUT', replayDeviceRoutes.setStatus.url.replace(':id', encodeURIComponent(id)), change)
  }

  /** Footage taken down (the status answer's footageTakedowns) is deleted from this box. */
  async confirmFootageDeletion(id: string, deletedFiles: number): Promise<void> {
    await this.call('PUT', footageTakedownDeviceRoutes.confirm.url.replace(':id', encodeURIComponent(id)), { deletedFiles })
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const token = this.options.accessToken()
    if (!token) throw new ServerUnavailableError('this box has no access token yet')
    const res = await serverCall({ baseUrl: this.options.baseUrl(), timeoutMs: this.options.timeoutMs }, path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    return answerOf(res, `${method} ${path}`)
  }
}

/**
 * A server from before matches names no kind: each of its replays is a player's clip. Filled in before
 * the contract is checked, so a box updated before its server keeps taking replays up.
 */
function clipsUnlessSaid(json: unknown): unknown {
  const fill = (items: unknown) =>
    Array.isArray(items) ? items.map((item: unknown) => (item && typeof item === 'object' && !('kind' in item) ? { ...item, kind: 'CLIP' } : item)) : items
  if (Array.isArray(json)) return fill(json)
  if (json && typeof json === 'object' && 'items' in json) return { ...json, items: fill((json as { items: unknown }).items) }
  return json
}
