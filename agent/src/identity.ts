// Who the box is: a deviceId that survives restarts and reinstalls, its hostname, address and version.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { debianArchitecture } from './update/decide.js'
import { hostname, networkInterfaces } from 'node:os'
import si from 'systeminformation'

export interface Identity {
  deviceId: string
  hostname: string
  localIp?: string
  version: string
  /** As Debian names it (dpkg --print-architecture): picks the package the server offers. */
  architecture?: string
}

export interface IdentitySources {
  configured?: string
  systemUuid?: string
  osUuid?: string
  primaryMac?: string
}

// Firmware fills unset UUIDs and MACs with placeholders that many boxes share.
const PLACEHOLDER = /^(0+|f+|not(settable|specified|available|present)|defaultstring|none|)$/i

function usable(value: string | undefined): value is string {
  return value !== undefined && !PLACEHOLDER.test(value.replace(/[-:\s]/g, ''))
}

/** The configured id, else the system UUID, else the OS UUID, else the primary MAC. */
export function chooseDeviceId(sources: IdentitySources): string {
  if (usable(sources.configured)) return sources.configured
  if (usable(sources.systemUuid)) return sources.systemUuid.toLowerCase()
  if (usable(sources.osUuid)) return sources.osUuid.toLowerCase()
  if (usable(sources.primaryMac)) return `mac-${sources.primaryMac.toLowerCase()}`
  throw new Error('no stable device id: set deviceId in the configuration')
}

/** The first non-internal IPv4 address, preferring the interface of the default route. */
export function primaryIpv4(defaultInterface?: string): string | undefined {
  const all = networkInterfaces()
  const names = [...(defaultInterface ? [defaultInterface] : []), ...Object.keys(all)]
  for (const name of names) {
    const found = (all[name] ?? []).find((a) => a.family === 'IPv4' && !a.internal)
    if (found) return found.address
  }
  return undefined
}

export function agentVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

export async function readIdentity(configuredDeviceId?: string): Promise<Identity> {
  const [system, uuid, defaultInterface] = await Promise.all([
    si.system().catch(() => undefined),
    si.uuid().catch(() => undefined),
    si.networkInterfaceDefault().catch(() => undefined)
  ])
  const interfaces = await si.networkInterfaces().catch(() => [])
  const list = Array.isArray(interfaces) ? interfaces : [interfaces]
  const primary = list.find((i) => i.iface === defaultInterface) ?? list.find((i) => !i.internal && i.mac)
  return {
    deviceId: chooseDeviceId({ configured: configuredDeviceId, systemUuid: system?.uuid, osUuid: uuid?.os, primaryMac: primary?.mac }),
    hostname: hostname(),
    localIp: primaryIpv4(defaultInterface),
    version: agentVersion(),
    architecture: machineArchitecture()
  }
}

/** dpkg's word for this machine, else Node's translated. */
export function machineArchitecture(): string {
  try {
    return execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return debianArchitecture(process.arch)
  }
}
