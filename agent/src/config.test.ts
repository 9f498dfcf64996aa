import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, envName, loadAgentConfig } from './config.js'

function configFile(t: { teardown(fn: () => void): void }, content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'agent.json')
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

t.test('the file with defaults for the rest', async (t) => {
  const config = loadAgentConfig(configFile(t, { serverUrl: 'https://api.example.org' }), {})
  t.equal(config.serverUrl, 'https://api.example.org')
  t.equal(config.segmentSeconds, 10)
  t.equal(config.stateDir, '/var/lib/club-agent')
  t.equal(config.httpPort, 8090)
  t.equal(config.httpHost, undefined, 'chosen at start from the route to the server')
  t.equal(config.maxDecoders, 2)
  t.equal(config.maxExports, 1)
})

t.test('every setting can be overridden by its environment variable', async (t) => {
  t.equal(envName('segmentSeconds'), 'CLUB_AGENT_SEGMENT_SECONDS')
  const config = loadAgentConfig(configFile(t, { serverUrl: 'https://a.example.org', segmentSeconds: 4 }), {
    CLUB_AGENT_SERVER_URL: 'http://b.example.org', CLUB_AGENT_SEGMENT_SECONDS: '6', CLUB_AGENT_RETENTION_HOURS: '1.5'
  })
  t.equal(config.serverUrl, 'http://b.example.org')
  t.equal(config.segmentSeconds, 6)
  t.equal(config.retentionHours, 1.5)
})

t.test('the default file may be absent when the environment says enough', async (t) => {
  t.equal(loadAgentConfig(undefined, { CLUB_AGENT_SERVER_URL: 'http://localhost:3000' }).serverUrl, 'http://localhost:3000')
})

t.test('invalid configuration is one clear line', async (t) => {
  const cases: Array<[unknown, Record<string, string>, RegExp]> = [
    [{}, {}, /^serverUrl is required \(in the configuration file or CLUB_AGENT_SERVER_URL\)$/],
    [{ serverUrl: 'ftp://x' }, {}, /^serverUrl="ftp:\/\/x" is not valid/],
    [{ serverUrl: 'http://x' }, { CLUB_AGENT_SEGMENT_SECONDS: 'ten' }, /^segmentSeconds="ten" is not valid/],
    [{ serverUrl: 'http://x', segmentSecond: 5 }, {}, /^segmentSecond in the configuration file is not a setting/],
    [{ serverUrl: 'http://x', cleanupSchedule: 'every minute' }, {}, /^cleanupSchedule="every minute" is not valid: expected a cron expression/],
    ['{not json', {}, /is not JSON/],
    [[1], {}, /must hold a JSON object/]
  ]
  for (const [content, env, message] of cases) {
    const error = (() => {
      try {
        loadAgentConfig(configFile(t, content), env)
      } catch (err) {
        return err as Error
      }
    })()
    t.type(error, ConfigError)
    t.match(error?.message, message)
    t.notMatch(error?.message, /\n/)
  }
  t.throws(() => loadAgentConfig('/nonexistent/agent.json', {}), { name: 'ConfigError', message: /cannot read the configuration file/ })
})
