// The s3:// driver: AWS S3 and S3-compatible stores, through the AWS SDK v3.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListPartsCommand,
  S3Client,
  UploadPartCommand
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { joinKey, keyOf, type Bucket, type BucketAddress, type ResumableUpload, type S3Credentials, type SignedUrlOptions, type UploadOptions } from './bucket.js'
import { pacedRead, partSizeFor, partsToSend, resumeOf } from './resumable.js'

type S3Upload = Extract<ResumableUpload, { scheme: 's3' }>

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

  async upload(localPath: string, key: string, options?: UploadOptions): Promise<string> {
    const fullKey = joinKey(this.address.prefix, key)
    const size = (await stat(localPath)).size
    if (options) {
      await this.uploadResumable(localPath, fullKey, size, options)
      return `s3://${this.address.bucket}/${fullKey}`
    }
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

  /**
   * A multipart upload whose id and acknowledged parts are handed to `onProgress` after each part, and
   * which, given them back, asks the store which parts it holds (ListParts) and sends only the others.
   * The upload is never aborted on failure: its parts are what the next attempt goes on from (a
   * bucket's lifecycle rule AbortIncompleteMultipartUpload clears those never finished).
   */
  private async uploadResumable(localPath: string, key: string, size: number, options: UploadOptions): Promise<void> {
    const Bucket = this.address.bucket
    let state = resumeOf(options, 's3', key, size)
    let stored: Array<{ number: number; size?: number }> = []
    if (state) {
      const listed = await this.storedParts(state)
      if (listed === 'gone') state = undefined
      else stored = listed
    }
    if (!state) {
      const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType: 'video/mp4' }))
      state = { scheme: 's3', key, size, partSize: partSizeFor(size), uploadId: created.UploadId!, parts: [] }
      await options.onProgress?.(state)
    }
    const current: S3Upload = state
    // Parts the store has (as it says, or as written down here) keep their ETags for the completion.
    const etags = new Map(current.parts.map((p) => [p.number, p.etag]))
    for (const part of partsToSend(size, current.partSize, stored)) {
      const body = pacedRead(localPath, part.start, part.end, options.pace?.bind(options))
      // The SDK pipes the body and does not hear its errors (the pace stopping the upload, a read
      // failing): the request is aborted here instead of waiting for bytes that never come.
      const abort = new AbortController()
      const failed = new Promise<never>((_, reject) => body.once('error', (err) => {
        abort.abort(err)
        reject(err)
      }))
      failed.catch(() => {})
      const sent = await Promise.race([
        this.client.send(new UploadPartCommand({
          Bucket, Key: key, UploadId: current.uploadId, PartNumber: part.number, Body: body, ContentLength: part.end - part.start + 1
        }), { abortSignal: abort.signal }),
        failed
      ])
      etags.set(part.number, sent.ETag!)
      current.parts = [...etags].map(([number, etag]) => ({ number, etag })).sort((a, b) => a.number - b.number)
      await options.onProgress?.(current)
    }
    await this.client.send(new CompleteMultipartUploadCommand({
      Bucket, Key: key, UploadId: current.uploadId,
      MultipartUpload: { Parts: current.parts.map((p) => ({ PartNumber: p.number, ETag: p.etag })) }
    }))
  }

  /**
   * The parts the store holds for an earlier attempt (ListParts, the store's word), 'gone' when it no
   * longer knows the upload. A store without ListParts (some S3-compatible ones) is taken at the word
   * written down here: a part it does not hold fails the completion, and the next attempt starts over.
   */
  private async storedParts(state: S3Upload): Promise<Array<{ number: number; size?: number; etag?: string }> | 'gone'> {
    const parts: Array<{ number: number; size?: number; etag?: string }> = []
    try {
      let marker: string | undefined
      for (;;) {
        const page = await this.client.send(new ListPartsCommand({ Bucket: this.address.bucket, Key: state.key, UploadId: state.uploadId, ...(marker ? { PartNumberMarker: marker } : {}) }))
        for (const p of page.Parts ?? []) parts.push({ number: p.PartNumber!, ...(p.Size !== undefined ? { size: p.Size } : {}), ...(p.ETag ? { etag: p.ETag } : {}) })
        if (!page.IsTruncated || !page.NextPartNumberMarker) break
        marker = page.NextPartNumberMarker
      }
    } catch (err) {
      const { name, $metadata } = err as { name?: string; $metadata?: { httpStatusCode?: number } }
      if (name === 'NoSuchUpload' || $metadata?.httpStatusCode === 404) return 'gone'
      if (name === 'NotImplemented' || name === 'MethodNotAllowed' || $metadata?.httpStatusCode === 405 || $metadata?.httpStatusCode === 501) return state.parts
      throw err
    }
    // The store's ETags replace those written down (a part sent again after the note was written).
    state.parts = parts.filter((p) => p.etag).map((p) => ({ number: p.number, etag: p.etag! }))
    return parts
  }

  async remove(location: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) }))
  }

  async signedUrl(location: string, options: SignedUrlOptions): Promise<string> {
    const command = new GetObjectCommand({ Bucket: this.address.bucket, Key: keyOf(this.address, location) })
    return getSignedUrl(this.client, command, { expiresIn: options.expiresInSeconds, signingDate: options.now })
  }
}

