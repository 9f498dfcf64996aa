// The two cloud stores the replay tests upload to, on loopback: s3rver (an S3 server from npm, in
// process) and FakeGcs (test/src/fake-gcs.ts), with credentials files such as a club would write.
import { generateKeyPairSync } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import S3rver from 's3rver'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface LocalS3 {
  endpoint: string
  port: number
  stop(): Promise<void>
  /** Starts again on the same port with the same objects (after stop: the store back from an outage). */
  start(): Promise<void>
}

export async function startS3(t: Teardown, dir: string, bucket: string, port = 0): Promise<LocalS3> {
  const directory = join(dir, 's3rver')
  mkdirSync(directory, { recursive: true })
  let server: S3rver | undefined
  const store: LocalS3 = {
    endpoint: '',
    port,
    async start() {
      server = new S3rver({ port: store.port, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket, configs: [] }] })
      const address = (await server.run()) as unknown as { port: number }
      store.port = address.port
      store.endpoint = `http://127.0.0.1:${address.port}`
    },
    async stop() {
      await server?.close()
      server = undefined
    }
  }
  await store.start()
  t.teardown(() => store.stop())
  return store
}

/** s3rver's built-in key pair, as an S3-compatible store's credentials file. */
export function s3Credentials(dir: string, endpoint: string): string {
  const path = join(dir, 's3-credentials.json')
  writeFileSync(path, JSON.stringify({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1', endpoint }))
  return path
}

/** A service-account key of a made-up account (its own RSA key), pointed at the local GCS server. */
export function gcsCredentials(dir: string, apiEndpoint: string): string {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'gcs-credentials.json')
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(path, JSON.stringify({
    type: 'service_account',
    project_id: 'club-test',
    client_email: 'replays@club-test.iam.gserviceaccount.com',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    apiEndpoint
  }))
  return path
}
