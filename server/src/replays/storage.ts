// The server's side of the replay buckets: it signs download links and deletes clips through the same
// drivers the boxes upload with (@club/storage), with its own credentials for the bucket
// (REPLAY_STORAGE_CREDENTIALS). A file:// bucket has no links of its own, so this server signs one and
// serves the file (GET /apis/v2/replays/{id}/download). No key and no signature is ever logged.
import type { FileHandle } from 'node:fs/promises'
import { BucketError, FileBucket, openBucket, parseBucketUrl, type Bucket } from '@club/storage'
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

  /**
   * Opens the file:// clip at `location` for a download, held inside `bucketUrl` (the bucket it was
   * reported in) once every symbolic link is followed: @club/storage's FileBucket refuses the rest.
   */
  openFile(location: string, bucketUrl: string | null): Promise<{ handle: FileHandle; size: number }> {
    return this.fileBucket(bucketUrl).openForRead(location)
  }

  /**
   * Deletes the clip at `location`; one already gone is not an error. A file:// clip only inside
   * `bucketUrl`, the bucket it was reported in (a cloud clip is named by its own bucket).
   */
  async remove(location: string, bucketUrl: string | null): Promise<void> {
    const bucket = location.startsWith('file://') ? this.fileBucket(bucketUrl) : await this.bucketOf(location)
    await bucket.remove(location)
  }

  private fileLinkSignature(replayId: string, expires: number): string {
    return hmacSha256Hex(this.options.linkKey, `replay-download:${replayId}:${expires}`)
  }

  /** A file:// bucket by its URL; none known (a clip of a box forgotten before 0023) is refused, not guessed. */
  private fileBucket(bucketUrl: string | null): FileBucket {
    const address = bucketUrl === null ? null : parseBucketUrl(bucketUrl)
    if (address?.scheme !== 'file') throw new BucketError('the file:// bucket this clip was stored in is not known')
    return new FileBucket(bucketUrl!, address.prefix)
  }

  private bucketOf(location: string): Promise<Bucket> {
    const address = parseBucketUrl(location)
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
