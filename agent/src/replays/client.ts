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
    const json = await this.call('GET', replayDeviceRoutes.list.url)
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
