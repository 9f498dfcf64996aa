// The gs:// driver: Google Cloud Storage, through its official client.
import { Storage } from '@google-cloud/storage'
import { stat } from 'node:fs/promises'
import { joinKey, keyOf, type Bucket, type BucketAddress, type GcsCredentials, type SignedUrlOptions, type UploadOptions } from './bucket.js'
import { pacedRead, resumeOf, sendStream } from './resumable.js'

/** Bytes per PUT of a resumable session: a multiple of 256 KiB, as GCS requires of every chunk but the last. */
const CHUNK_BYTES = 8 * 1024 * 1024

export class GcsBucket implements Bucket {
  readonly storage: Storage

  constructor(
    readonly url: string,
    private readonly address: BucketAddress,
    credentials: GcsCredentials | undefined
  ) {
    this.storage = new Storage({
      ...(credentials ? { credentials: { client_email: credentials.client_email, private_key: credentials.private_key } } : {}),
      ...(credentials?.project_id ? { projectId: credentials.project_id } : {}),
      ...(credentials?.apiEndpoint ? { apiEndpoint: credentials.apiEndpoint } : {}),
      // One try per call: the agent's own backoff decides when to try again.
      retryOptions: { autoRetry: false }
    })
  }

  async upload(localPath: string, key: string, options?: UploadOptions): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    if (options) {
      await this.uploadResumable(localPath, fullKey, options)
      return `gs://${this.address.bucket}/${fullKey}`
    }
    await this.storage.bucket(this.address.bucket).upload(localPath, {
      destination: fullKey,
      // A resumable session: a large clip on a venue's uplink survives a dropped connection.
      resumable: true,
      contentType: 'video/mp4',
      validation: false
    })
    return `gs://${this.address.bucket}/${fullKey}`
  }

  /**
   * GCS's resumable session driven by hand: its URI is handed to `onProgress` once made, and, given
   * back, the store is asked how many bytes it holds (a PUT of `bytes *\/size`), and the rest is sent
   * from there in chunks. A session the store no longer knows (a week old) starts again from zero.
   */
  private async uploadResumable(localPath: string, key: string, options: UploadOptions): Promise<void> {
    const size = (await stat(localPath)).size
    let state = resumeOf(options, 'gs', key, size)
    // The note is only a file on disk: a session elsewhere than this store's own endpoint would be
    // sent the clip's bytes (footage to any host), so such a note starts again from zero.
    if (state && !onStore(state.sessionUri, this.storage.apiEndpoint)) state = undefined
    let offset = 0
    if (state) {
      const received = await this.receivedBytes(state.sessionUri, size)
      if (received === 'done') return
      if (received === 'gone') state = undefined
      else offset = received
    }
    if (!state) {
      const [sessionUri] = await this.storage.bucket(this.address.bucket).file(key).createResumableUpload({ metadata: { contentType: 'video/mp4' } })
      state = { scheme: 'gs', key, size, sessionUri }
      await options.onProgress?.(state)
    }
    while (offset < size) {
      const end = Math.min(size, offset + CHUNK_BYTES) - 1
      const res = await sendStream(state.sessionUri, 'PUT', {
        'content-length': String(end - offset + 1),
        'content-range': `bytes ${offset}-${end}/${size}`
      }, pacedRead(localPath, offset, end, options.pace?.bind(options)))
      if (res.status === 200 || res.status === 201) return
      if (res.status !== 308) throw new Error(`the store refused a chunk of the upload (${res.status}): ${res.text.slice(0, 200)}`)
      offset = receivedOf(res.headers.range)
      await options.onProgress?.(state)
    }
    // An empty file, or every byte acknowledged without the final answer: ask once more.
    const received = await this.receivedBytes(state.sessionUri, size)
    if (received !== 'done') throw new Error('the store has not finished the upload')
  }

  /** How many bytes of the session the store holds; 'done' when the object is stored, 'gone' when the session is unknown. */
  private async receivedBytes(sessionUri: string, size: number): Promise<number | 'done' | 'gone'> {
    const res = await sendStream(sessionUri, 'PUT', { 'content-length': '0', 'content-range': `bytes */${size}` }, undefined)
    if (res.status === 200 || res.status === 201) return 'done'
    if (res.status === 404 || res.status === 410) return 'gone'
    if (res.status !== 308) throw new Error(`the store did not say how much of the upload it holds (${res.status})`)
    return receivedOf(res.headers.range)
  }

  async remove(location: string): Promise<void> {
    await this.storage.bucket(this.address.bucket).file(keyOf(this.address, location)).delete({ ignoreNotFound: true })
  }

  async signedUrl(location: string, options: SignedUrlOptions): Promise<string> {
    const [url] = await this.storage
      .bucket(this.address.bucket)
      .file(keyOf(this.address, location))
      .getSignedUrl({ version: 'v4', action: 'read', accessibleAt: options.now, expires: options.now.getTime() + options.expiresInSeconds * 1000 })
    return url
  }
}

/** Whether a resumable session's URI is on the store's own endpoint (its scheme, host and port). */
export function onStore(sessionUri: string, apiEndpoint: string): boolean {
  try {
    return new URL(sessionUri).origin === new URL(apiEndpoint).origin
  } catch {
    return false
  }
}

/** The bytes a 308's Range header (`bytes=0-N`) says the store holds: N + 1, or none without one. */
export function receivedOf(range: string | undefined): number {
  const last = /^bytes=0-(\d+)$/.exec(range ?? '')?.[1]
  return last === undefined ? 0 : Number(last) + 1
}
