// The s3:// driver: AWS S3 and S3-compatible stores, through the AWS SDK v3.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { joinKey, keyOf, type Bucket, type BucketAddress, type S3Credentials, type SignedUrlOptions } from './bucket.js'

export class S3Bucket implements Bucket {
  readonly client: S3Client

  constructor(
    readonly url: string,
    private readonly address: BucketAddress,
    credentials: S3Credentials | undefined,
    maxAttempts: number
  ) {
    this.client = new S3Client({
      region: credentials?.region ?? 'us-east-1',
      ...(credentials?.endpoint ? { endpoint: credentials.endpoint } : {}),
      // Path-style: S3-compatible stores rarely have a DNS name per bucket.
      forcePathStyle: credentials?.forcePathStyle ?? credentials?.endpoint !== undefined,
      ...(credentials ? { credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}) } } : {}),
      // SDK 3.729+ adds CRC checksums (and aws-chunked bodies) to every upload by default, which many
      // S3-compatible stores refuse; only where the API requires one.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts
    })
  }

  async upload(localPath: string, key: string): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    const size = (await stat(localPath)).size
    // Multipart above 5 MiB parts (lib-storage), a plain PUT below: a 30 s clip is a few megabytes.
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.address.bucket, Key: fullKey, Body: createReadStream(localPath), ContentType: 'video/mp4', ContentLength: size },
      partSize: 5 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false
    })
    await upload.done()
    return `s3://${this.address.bucket}/${fullKey}`
  }

  async remove(location: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) }))
  }

  async signedUrl(location: string, options: SignedUrlOptions): Promise<string> {
    const command = new GetObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) })
    return getSignedUrl(this.client, command, { expiresIn: options.expiresInSeconds, signingDate: options.now })
  }
}

