// What the box page says, decided without a browser: what the box waits for, and each camera's
// state and problems in words. Tested beside this file.
import type { AgentCamera, AgentHealth } from '@club/contract'
import { formatAgo } from '../shared/format.js'

export interface Waiting {
  /** One line: what the box is doing or waiting for. */
  headline: string
  /** What to do about it, or what to read out to the admin. */
  detail: string
  tone: 'ok' | 'wait' | 'bad'
}

export function waitingFor(health: Pick<AgentHealth, 'status' | 'connected' | 'serverUrl' | 'deviceId' | 'hostname' | 'area' | 'displayName'>): Waiting {
  const unreachable = `The server at ${health.serverUrl} cannot be reached; the box keeps trying.`
  switch (health.status) {
    case 'UNREGISTERED':
      return health.connected
        ? { headline: 'Registering with the server', detail: `Server: ${health.serverUrl}.`, tone: 'wait' }
        : { headline: 'Not registered: the server is unreachable', detail: `${unreachable} Check the network and the address.`, tone: 'bad' }
    case 'PENDING':
      return {
        headline: 'Waiting for approval',
        detail:
          `Read these to the club's admin, who approves the box in the console: device id ${health.deviceId}, hostname ${health.hostname}.` +
          (health.connected ? '' : ` ${unreachable}`),
        tone: 'wait'
      }
    case 'APPROVED':
      return {
        headline: 'Approved: recording',
        detail:
          `Area ${health.area?.id ?? 'unknown'}` +
          (health.displayName ? `, as “${health.displayName}”.` : '.') +
          (health.connected ? '' : ` ${unreachable} Recording goes on with the last approved configuration.`),
        tone: health.connected ? 'ok' : 'wait'
      }
    case 'REJECTED':
      return { headline: 'Rejected', detail: 'An admin rejected this box: it records nothing. An admin can still approve it in the console.', tone: 'bad' }
    case 'REVOKED':
      return { headline: 'Revoked', detail: "An admin revoked this box's access: it records nothing until it is approved again.", tone: 'bad' }
  }
}

const STATE_WORDS: Record<AgentCamera['state'], string> = {
  starting: 'Starting',
  recording: 'Recording',
  restarting: 'Not recording: restarting',
  stalled: 'Not recording: stalled',
  stopped: 'Not recording'
}

export interface CameraLines {
  state: string
  feed: string
  lastSegment: string
  problems: string[]
}

/** A camera's card in words. The LUT message comes from the agent ("LUT /x.cube cannot be read (ENOENT)"). */
export function cameraLines(camera: AgentCamera, now: number): CameraLines {
  const problems: string[] = []
  if (camera.state === 'restarting') {
    problems.push(`Feed unreachable: the camera's stream could not be read; trying again (${camera.restarts} restarts so far).`)
  }
  if (camera.state === 'stalled') {
    problems.push(`Stalled: no new footage since ${formatAgo(camera.lastSegmentAt, now)}; the recording is being restarted.`)
  }
  if (camera.error) {
    const missing = /\(ENOENT\)/.test(camera.error)
    problems.push(`${missing ? 'LUT missing' : 'LUT unusable'}: ${camera.error}. Pictures and replays are made without the colour correction.`)
  }
  if (camera.feed === 'feed2') problems.push('The main feed failed three times in a row: the second feed is in use.')
  return {
    state: STATE_WORDS[camera.state],
    feed: camera.feed === 'feed2' ? 'second feed' : 'main feed',
    lastSegment: camera.lastSegmentAt ? formatAgo(camera.lastSegmentAt, now) : 'none yet',
    problems
  }
}
