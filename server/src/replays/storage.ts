// The server's side of the replay buckets: it signs download links and deletes clips through the same
// drivers the boxes upload with (@club/storage), with its own credentials for the bucket
// (REPLAY_STORAGE_CREDENTIALS). A file:// bucket has no links of its own, so this server signs one and
// serves the file (GET /apis/v2/replays/{id}/download). No key and no signature is ever logged.
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FileBucket, openBucket, parseBucketUrl, type Bucket } from '@club/storage'
import { hmacSha256Hex, safeEqual } from '../crypto.js'

export interface ReplayStorageOptions {
  /** REPLAY_STORAGE_CREDENTIALS; empty: the SDKs' own chain. */
  credentialsPath: string
  /** The key file:// download links are signed with. */
  linkKey: string
  /** PUBLIC_BASE_URL: where file:// download links point. */
  publicBaseUrl: string
}

export interface DownloadLink {
  url: string
  expiresAt: Date
}

export class ReplayStorage {
  /** Cloud clients by bucket: made once, they keep their connections. */
  private readonly buckets = new Map<string, Promise<Bucket>>()

  constructor(private readonly options: ReplayStorageOptions) {}

  /** A link that downloads the clip at `location` until `now + ttlSeconds`. */
  async downloadLink(replayId: string, location: string, now: Date, ttlSeconds: number): Promise<DownloadLink> {
    const expiresAt = new Date(now.getTime() + ttlSeconds * 1000)
    if (location.startsWith('file://')) {
      const expires = Math.floor(expiresAt.getTime() / 1000)
      const base = this.options.publicBaseUrl.replace(/\/$/, '')
      const signature = this.fileLinkSignature(replayId, expires)
      return { url: `${base}/apis/v2/replays/${encodeURIComponent(replayId)}/download?expires=${expires}&signature=${signature}`, expiresAt: new Date(expires * 1000) }
    }
    const bucket = await this.bucketOf(location)
    return { url: await bucket.signedUrl(location, { expiresInSeconds: ttlSeconds, now }), expiresAt }
  }

  /** Whether a file:// download link is this server's and still valid at `now`. */
  checkFileLink(replayId: string, expires: number, signature: string, now: Date): boolean {
    return safeEqual(signature, this.fileLinkSignature(replayId, expires)) && expires * 1000 > now.getTime()
  }

  /** The file of a file:// location (checked against the box's bucket when it was reported). */
  filePath(location: string): string {
    return resolve(fileURLToPath(location))
  }

  /** Deletes the clip at `location`; one already gone is not an error. */
  async remove(location: string): Promise<void> {
    await (await this.bucketOf(location)).remove(location)
  }

  private fileLinkSignature(replayId: string, expires: number): string {
    return hmacSha256Hex(this.options.linkKey, `replay-download:${replayId}:${expires}`)
  }

  private bucketOf(location: string): Promise<Bucket> {
    const address = parseBucketUrl(location)
    if (address.scheme === 'file') return Promise.resolve(new FileBucket(location, dirname(address.prefix)))
    const url = `${address.scheme}://${address.bucket}`
    let bucket = this.buckets.get(url)
    if (!bucket) {
      bucket = openBucket(url, this.options.credentialsPath ? { credentialsPath: this.options.credentialsPath } : {})
      // A failed open (an unreadable credentials file) is tried again next time, not kept.
      bucket.catch(() => this.buckets.delete(url))
      this.buckets.set(url, bucket)
    }
    return bucket
  }
}
