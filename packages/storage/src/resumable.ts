// What the resumable drivers share: which parts of a file are still to send (pure), a file's bytes
// read through the caller's pace, and one HTTP PUT of a stream (GCS's session URI takes plain PUTs).
import { createReadStream } from 'node:fs'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'
import { PACE_SLICE_BYTES, type ResumableUpload, type UploadOptions } from './bucket.js'

/** S3's floor for every part but the last, and its ceiling on parts. */
const MIN_PART_BYTES = 5 * 1024 * 1024
const MAX_PARTS = 10_000

/**
 * The part size for a file of `size` bytes: 8 MiB (a lost part costs little on a venue's uplink),
 * larger only as needed to stay within S3's 10,000 parts (a 4-hour match is a few GB).
 */
export function partSizeFor(size: number): number {
  const floor = 8 * 1024 * 1024
  return Math.max(floor, MIN_PART_BYTES, Math.ceil(size / MAX_PARTS / (1024 * 1024)) * 1024 * 1024)
}

export interface PartRange {
  number: number
  /** First byte, inclusive. */
  start: number
  /** Last byte, inclusive (as a read stream's `end` and a Content-Range take it). */
  end: number
}

/** Every part of a file of `size` bytes in parts of `partSize`, numbered from 1; at least one (an empty file). */
export function partsOf(size: number, partSize: number): PartRange[] {
  const count = Math.max(1, Math.ceil(size / partSize))
  return Array.from({ length: count }, (_, i) => ({ number: i + 1, start: i * partSize, end: Math.min(size, (i + 1) * partSize) - 1 }))
}

/**
 * The parts still to send: those the store does not hold whole. A part the store has at another size
 * (a different file, a part cut short) is sent again; S3 overwrites a part sent twice.
 */
export function partsToSend(size: number, partSize: number, stored: ReadonlyArray<{ number: number; size?: number }>): PartRange[] {
  const have = new Map(stored.map((p) => [p.number, p.size]))
  return partsOf(size, partSize).filter((p) => {
    if (!have.has(p.number)) return true
    const storedSize = have.get(p.number)
    return storedSize !== undefined && storedSize !== p.end - p.start + 1
  })
}

/** The earlier attempt's state, when it is one of this same upload (same driver, key and file size). */
export function resumeOf<S extends ResumableUpload['scheme']>(
  options: UploadOptions | undefined,
  scheme: S,
  key: string,
  size: number
): Extract<ResumableUpload, { scheme: S }> | undefined {
  const resume = options?.resume
  return resume && resume.scheme === scheme && resume.key === key && resume.size === size ? (resume as Extract<ResumableUpload, { scheme: S }>) : undefined
}

/** Bytes `start`..`end` (inclusive) of a file, each slice let through only once `pace` allows it. */
export function pacedRead(path: string, start: number, end: number, pace?: (bytes: number) => Promise<void>): Readable {
  const file = createReadStream(path, { start, end, highWaterMark: PACE_SLICE_BYTES })
  if (!pace) return file
  return Readable.from(
    (async function* () {
      for await (const chunk of file) {
        await pace((chunk as Buffer).length)
        yield chunk as Buffer
      }
    })(),
    { objectMode: false }
  )
}

/** One HTTP(S) request with a streamed body; answers the status and headers (the body is drained). */
export function sendStream(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Readable | undefined,
  idleTimeoutMs = 60_000
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    // A connection of its own for each request (no keep-alive pool): a chunk is megabytes, so a new
    // connection costs next to nothing, and a pooled one the store (or the uplink) closed meanwhile
    // would fail the next chunk with "socket hang up" before a byte is sent: exactly after a drop,
    // when the upload resumes.
    const request = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8').slice(0, 2000) }))
      res.on('error', reject)
    })
    // A connection that goes silent (a venue's uplink dropped) fails instead of hanging for ever.
    request.setTimeout(idleTimeoutMs, () => request.destroy(new Error(`no answer from the store for ${idleTimeoutMs / 1000} s`)))
    request.on('error', reject)
    if (!body) {
      request.end()
      return
    }
    body.on('error', (err) => request.destroy(err))
    body.pipe(request)
  })
}
