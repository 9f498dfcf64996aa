// `club-agent setup --server URL [--name NAME]`: the installer's one command after installing the
// package. Checks that the server answers and ffmpeg runs, writes the configuration and the release
// key, starts the service and says what to read out to the admin (deviceId and hostname).
import { createHash, createPublicKey, type KeyObject } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { agentReleaseRoutes, AgentReleaseKey, AgentReleaseKeys } from '@club/contract'
import { Value } from 'typebox/value'
import { AgentConfigSchema, ConfigError, loadAgentConfig, type AgentConfig } from './config.js'
import { serverCall } from './control/client.js'

interface SetupOptions {
  configPath: string
  server: string
  name?: string
  /** A release key file to trust instead of the one the server answers. */
  releaseKey?: string
  /** --fingerprint (repeatable): the release keys' SHA-256 fingerprints the admin gave; any other key is refused. */
  fingerprints?: string[]
}

export interface SetupDeps {
  fetch: typeof fetch
  /** Answers why the configured ffmpeg or ffprobe cannot run, or undefined. */
  checkFfmpeg: (config: AgentConfig) => Promise<string | undefined>
  /** Enables and (re)starts the service (systemctl). */
  startService: () => Promise<void>
  identity: (config: AgentConfig) => Promise<{ deviceId: string; hostname: string }>
  /** The box key in the state folder, made now when the agent has not made it yet. */
  boxKey: (config: AgentConfig) => { fingerprint: string }
  out: (line: string) => void
}

export class SetupError extends Error {
  override name = 'SetupError'
}

/** The configuration file after setup: the installer's other settings kept, the server and name set. */
function configAfterSetup(existing: Record<string, unknown>, options: Pick<SetupOptions, 'server' | 'name'>): Record<string, unknown> {
  return { ...existing, serverUrl: options.server.replace(/\/+$/, ''), ...(options.name ? { displayName: options.name } : {}) }
}

/**
 * Writes the configuration only once everything checked out: it is written beside its place, read
 * back as the agent reads it (its defaults, its checks), and renamed into place after ffmpeg and the
 * server answered. A refused setup leaves the configuration as it was.
 */
export async function setup(options: SetupOptions, deps: SetupDeps): Promise<{ deviceId: string; hostname: string }> {
  if (!Value.Check(AgentConfigSchema.properties.serverUrl, options.server)) throw new SetupError(`--server ${options.server} is not an http(s) URL`)
  const candidate = `${options.configPath}.setup-${process.pid}`
  mkdirSync(dirname(options.configPath), { recursive: true, mode: 0o755 })
  writeFileSync(candidate, `${JSON.stringify(configAfterSetup(readExisting(options.configPath), options), null, 2)}\n`, { mode: 0o644 })
  let releaseKeys: ReleaseKey[] | undefined
  let config: AgentConfig
  try {
    config = readCandidate(candidate, options.configPath)
    const missing = await deps.checkFfmpeg(config)
    if (missing) throw new SetupError(missing)
    if (options.releaseKey) releaseKeys = releaseKeysOf(readReleaseKey(options.releaseKey), `--release-key ${options.releaseKey}`)
    else {
      const fetched = await fetchReleaseKeys(config.serverUrl, deps)
      releaseKeys = fetched?.map((pem) => releaseKeyOf(pem, `the release key the server at ${config.serverUrl} answered`))
    }
    if (options.fingerprints) checkFingerprints(releaseKeys ?? [], options.fingerprints)
    renameSync(candidate, options.configPath)
  } finally {
    rmSync(candidate, { force: true })
  }
  if (releaseKeys) {
    mkdirSync(dirname(config.releaseKeyPath), { recursive: true, mode: 0o755 })
    // Every key the club trusts (several while one is rotated): a package signed by any installs.
    writeFileSync(config.releaseKeyPath, releaseKeys.map((k) => k.pem).join(''), { mode: 0o644 })
    for (const key of releaseKeys) deps.out(`release key: ${config.releaseKeyPath}, SHA-256 fingerprint ${key.fingerprint}`)
    const overHttp = !options.releaseKey && config.serverUrl.startsWith('http://')
    deps.out(
      `Compare the fingerprint with the one the admin got from club agent-releases keygen${overHttp ? ': this key came over plain http, only that comparison shows it is the club\'s' : ''}`
    )
  } else {
    deps.out(`warning: the server trusts no release key yet (AGENT_RELEASE_PUBLIC_KEYS); until ${config.releaseKeyPath} holds it, this box installs no update`)
  }
  // Before the service starts, so that the agent finds the key this prints.
  const boxKey = deps.boxKey(config)
  await deps.startService()
  const identity = await deps.identity(config)
  deps.out(`deviceId: ${identity.deviceId}`)
  deps.out(`hostname: ${identity.hostname}`)
  deps.out(`box key: ${boxKey.fingerprint} (the console shows it for this box: compare before approving it or accepting a claim)`)
  deps.out('Ask the admin to approve this box: club devices list --status PENDING, then club devices approve ID --area AREA_ID')
  return identity
}

/**
 * Refuses the keys unless every one is among `expected` (the fingerprints the admin got from keygen,
 * colons and case ignored): a server, or anyone between it and the box over plain http, could
 * otherwise add a key of its own to those the box pins.
 */
function checkFingerprints(keys: ReleaseKey[], expected: string[]): void {
  const wanted = new Set(expected.map((f) => f.toLowerCase().replace(/[:\s]/g, '')))
  for (const f of wanted) if (!/^[0-9a-f]{64}$/.test(f)) throw new SetupError(`--fingerprint ${f} is not a SHA-256 fingerprint (64 hex digits)`)
  if (keys.length === 0) throw new SetupError('no release key to compare with --fingerprint: the server trusts none yet')
  const unknown = keys.filter((k) => !wanted.has(k.fingerprint))
  if (unknown.length > 0) {
    throw new SetupError(`release key ${unknown.map((k) => k.fingerprint).join(', ')} is not one of --fingerprint: nothing pinned, the configuration left as it was`)
  }
}

/** The new configuration as the agent will read it; the file alone, as the service has not this shell's environment. */
function readCandidate(candidate: string, configPath: string): AgentConfig {
  try {
    return loadAgentConfig(candidate, {})
  } catch (err) {
    if (err instanceof ConfigError) throw new SetupError(`${configPath} would not be a valid configuration: ${err.message.replaceAll(candidate, configPath)}`)
    throw err
  }
}

function readExisting(path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return {}
  }
  try {
    const parsed = JSON.parse(text) as unknown
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}
  } catch {
    throw new SetupError(`${path} is not JSON: fix or remove it, then run setup again`)
  }
}

interface ReleaseKey {
  /** The public half as SPKI PEM: all that is written, whatever the source held besides. */
  pem: string
  /** SHA-256 of its DER (SPKI), hex, as `club agent-releases keygen` and `openssl pkey -pubin -outform DER | sha256sum` print it. */
  fingerprint: string
}

/** The club's release key from a PEM text; an Ed25519 key or a SetupError naming `source`. */
function releaseKeyOf(text: string, source: string): ReleaseKey {
  let key: KeyObject
  try {
    key = createPublicKey(text)
  } catch {
    throw new SetupError(`${source} is not a key in PEM`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new SetupError(`${source} is a ${key.asymmetricKeyType} key, not the club's Ed25519 release key`)
  return {
    pem: key.export({ type: 'spki', format: 'pem' }).toString(),
    fingerprint: createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex')
  }
}

/** Every key of a PEM text that may hold several blocks (a file of trusted keys); only their public halves. */
function releaseKeysOf(text: string, source: string): ReleaseKey[] {
  const blocks = text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [text]
  return blocks.map((block) => releaseKeyOf(block, source))
}

function readReleaseKey(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new SetupError(`--release-key ${path}: ${(err as Error).message}`)
  }
}

/** The public halves of the release keys the server trusts; undefined when it trusts none yet (404). */
async function fetchReleaseKeys(serverUrl: string, deps: SetupDeps): Promise<string[] | undefined> {
  let res: Response
  try {
    res = await serverCall({ baseUrl: serverUrl, timeoutMs: 15_000, fetch: deps.fetch }, agentReleaseRoutes.key.url, {})
  } catch (err) {
    throw new SetupError(`the server at ${serverUrl} does not answer: ${(err as Error).message}`)
  }
  if (res.status === 404) return undefined
  const body = (await res.json().catch(() => undefined)) as unknown
  if (res.status !== 200 || !Value.Check(AgentReleaseKey, body)) throw new SetupError(`the server at ${serverUrl} answered ${res.status}: is it the club platform?`)
  // A server from before key rotation answers its one key only.
  return Value.Check(AgentReleaseKeys, body) ? body.keys.map((k) => k.publicKey) : [body.publicKey]
}
