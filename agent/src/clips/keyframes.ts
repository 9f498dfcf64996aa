// Where a recorded segment's keyframes are, read from its boxes rather than by an ffprobe: the
// recorder writes fragmented MP4 with a fragment at each keyframe (frag_keyframe), so each fragment's
// first picture is one, and its time is in the fragment's header (tfdt, and trun's composition
// offset). Two ffprobes less before a plain cut (0.1 CPU-s and a process start each, bench/README).
// The parsing is pure; readKeyframes is the thin shell that reads the headers, never the pictures.
import { open } from 'node:fs/promises'
import type { Keyframe } from './smart-cut.js'

interface Track {
  id: number
  timescale: number
  video: boolean
}

/** The child boxes of `box` (a buffer holding a box's content), by type, in order. */
function children(box: Buffer): Array<{ type: string; body: Buffer }> {
  const found: Array<{ type: string; body: Buffer }> = []
  for (let at = 0; at + 8 <= box.length;) {
    let size = box.readUInt32BE(at)
    let header = 8
    if (size === 1) {
      if (at + 16 > box.length) break
      size = Number(box.readBigUInt64BE(at + 8))
      header = 16
    } else if (size === 0) size = box.length - at
    if (size < header || at + size > box.length) break
    found.push({ type: box.toString('latin1', at + 4, at + 8), body: box.subarray(at + header, at + size) })
    at += size
  }
  return found
}

const child = (box: Buffer, type: string) => children(box).find((c) => c.type === type)?.body

/** The movie's tracks; undefined when one has an edit list (its times would need it applied: ffprobe does that). */
function tracks(moov: Buffer): Track[] | undefined {
  const found: Track[] = []
  for (const trak of children(moov).filter((c) => c.type === 'trak').map((c) => c.body)) {
    if (child(trak, 'edts')) return undefined
    const tkhd = child(trak, 'tkhd')
    const mdia = child(trak, 'mdia')
    const mdhd = mdia && child(mdia, 'mdhd')
    const hdlr = mdia && child(mdia, 'hdlr')
    if (!tkhd || !mdhd || !hdlr || tkhd.length < 24 || mdhd.length < 24 || hdlr.length < 12) return undefined
    const id = tkhd.readUInt32BE(tkhd[0] === 1 ? 20 : 12)
    const timescale = mdhd.readUInt32BE(mdhd[0] === 1 ? 20 : 12)
    if (!timescale) return undefined
    found.push({ id, timescale, video: hdlr.toString('latin1', 8, 12) === 'vide' })
  }
  return found
}

/** A track fragment's track, the decoding time of its first sample, its composition offset, and whether it is a sync sample. */
function firstSample(traf: Buffer): { track: number; dts: number; offset: number; sync: boolean } | undefined {
  const tfhd = child(traf, 'tfhd')
  const tfdt = child(traf, 'tfdt')
  const trun = child(traf, 'trun')
  if (!tfhd || !tfdt || !trun || tfhd.length < 8 || tfdt.length < 8 || trun.length < 8) return undefined
  const tfhdFlags = tfhd.readUInt32BE(0) & 0xffffff
  let at = 8 + (tfhdFlags & 0x1 ? 8 : 0) + (tfhdFlags & 0x2 ? 4 : 0) + (tfhdFlags & 0x8 ? 4 : 0) + (tfhdFlags & 0x10 ? 4 : 0)
  let sampleFlags = tfhdFlags & 0x20 && tfhd.length >= at + 4 ? tfhd.readUInt32BE(at) : undefined
  const dts = tfdt[0] === 1 ? Number(tfdt.readBigUInt64BE(4)) : tfdt.readUInt32BE(4)
  const version = trun[0]!
  const flags = trun.readUInt32BE(0) & 0xffffff
  if (trun.readUInt32BE(4) === 0) return undefined
  at = 8 + (flags & 0x1 ? 4 : 0)
  if (flags & 0x4) {
    sampleFlags = trun.readUInt32BE(at)
    at += 4
  }
  at += (flags & 0x100 ? 4 : 0) + (flags & 0x200 ? 4 : 0)
  if (flags & 0x400) {
    if (!(flags & 0x4)) sampleFlags = trun.readUInt32BE(at)
    at += 4
  }
  const offset = flags & 0x800 ? (version === 1 ? trun.readInt32BE(at) : trun.readUInt32BE(at)) : 0
  // sample_is_non_sync_sample; a fragment without flags is a keyframe's by the recorder's frag_keyframe.
  return { track: tfhd.readUInt32BE(4), dts, offset, sync: sampleFlags === undefined || (sampleFlags & 0x10000) === 0 }
}

/**
 * The keyframes of a fragmented MP4 from its movie box and its fragments' boxes (their content), on
 * the file's timeline as ffprobe gives it (0 = its earliest stream's start, which is `start` seconds
 * on its clock); undefined when the file is not one this can read (no fragment with a picture, an
 * edit list): ffprobe reads those.
 */
export function fragmentKeyframes(moov: Buffer, moofs: readonly Buffer[]): { start: number; keyframes: Keyframe[] } | undefined {
  const known = tracks(moov)
  const video = known?.find((t) => t.video)
  if (!known || !video) return undefined
  const firsts = new Map<number, number>()
  const keyframes: Keyframe[] = []
  for (const moof of moofs) {
    for (const traf of children(moof).filter((c) => c.type === 'traf')) {
      const sample = firstSample(traf.body)
      const track = sample && known.find((t) => t.id === sample.track)
      if (!sample || !track) continue
      const pts = (sample.dts + sample.offset) / track.timescale
      firsts.set(track.id, Math.min(firsts.get(track.id) ?? pts, pts))
      if (track === video && sample.sync) keyframes.push({ pts, dts: sample.dts / track.timescale })
    }
  }
  if (keyframes.length === 0) return undefined
  const start = Math.min(...firsts.values())
  const micro = (n: number) => Math.round(n * 1e6) / 1e6
  return {
    start: micro(start),
    keyframes: keyframes.map((k) => ({ pts: micro(k.pts - start), dts: micro(k.dts - start) })).sort((a, b) => a.pts - b.pts)
  }
}

/**
 * Reads a segment's movie box and its fragments' boxes (a few kilobytes; the pictures are skipped)
 * and answers its keyframes; undefined when they cannot be read so (see fragmentKeyframes). A
 * segment still being written counts up to its last whole fragment: a fragment's header is kept
 * once the data after it is complete.
 */
export async function readKeyframes(path: string): Promise<{ start: number; keyframes: Keyframe[] } | undefined> {
  const file = await open(path, 'r')
  try {
    const { size } = await file.stat()
    const header = Buffer.alloc(16)
    let moov: Buffer | undefined
    let pending: Buffer | undefined
    const moofs: Buffer[] = []
    for (let at = 0; at + 8 <= size;) {
      const { bytesRead } = await file.read(header, 0, 16, at)
      let length = header.readUInt32BE(0)
      let headerSize = 8
      if (length === 1) {
        if (bytesRead < 16) break
        length = Number(header.readBigUInt64BE(8))
        headerSize = 16
      } else if (length === 0) length = size - at
      if (length < headerSize || at + length > size) break
      const type = header.toString('latin1', 4, 8)
      if (type === 'moov' || type === 'moof') {
        const box = Buffer.alloc(length - headerSize)
        await file.read(box, 0, box.length, at + headerSize)
        if (type === 'moov') moov = box
        else pending = box
      } else if (type === 'mdat' && pending) {
        moofs.push(pending)
        pending = undefined
      }
      at += length
    }
    return moov ? fragmentKeyframes(moov, moofs) : undefined
  } finally {
    await file.close()
  }
}
