// The gs:// driver: Google Cloud Storage, through its official client.
import { Storage } from '@google-cloud/storage'
import { joinKey, keyOf, type Bucket, type BucketAddress, type GcsCredentials, type SignedUrlOptions } from './bucket.js'

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

  async upload(localPath: string, key: string): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    await this.storage.bucket(this.address.bucket).upload(localPath, {
      destination: fullKey,
      // A resumable session: a large clip on a venue's uplink survives a dropped connection.
      resumable: true,
      contentType: 'video/mp4',
      validation: false
    })
    return `gs://${this.address.bucket}/${fullKey}`
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
