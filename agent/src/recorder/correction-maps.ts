// The camera's geometry (lens k1/k2, rotation, scale) as one pixel map for ffmpeg's `remap`: for each
// pixel of the corrected picture, the pixel of the recorded one it comes from. Computed once per
// setting and frame size, so an export moves every pixel once instead of once per filter. Pure.
import { createHash } from 'node:crypto'
import type { Camera } from '@club/contract'
import { correctedSize, normalizeDegrees } from './pipeline.js'

/** remap's mark for "no source pixel": any value at or past the frame's edge gets its fill colour. */
export const UNMAPPED = 0xffff

export interface Geometry {
  k1: number
  k2: number
  /** Degrees, in [0, 360). */
  rotation: number
  scale: number
}

export interface CorrectionMaps {
  width: number
  height: number
  /** Source column and row of each output pixel, row by row; UNMAPPED outside the picture. */
  x: Uint16Array
  y: Uint16Array
}

export function geometryOf(camera: Camera): Geometry {
  return { k1: camera.distortion1 ?? 0, k2: camera.distortion2 ?? 0, rotation: normalizeDegrees(camera.rotation ?? 0), scale: camera.scale ?? 1 }
}

/**
 * Whether the geometry is worth a remap. A lone quarter turn (a transpose: an exact pixel move) or a
 * lone scale (bicubic, where remap has only the nearest pixel) is one pass already and better done by
 * its own filter; anything else would be two or more passes, or a per-pixel rotate.
 */
export function needsRemap(camera: Camera): boolean {
  const { k1, k2, rotation, scale } = geometryOf(camera)
  const lens = k1 !== 0 || k2 !== 0
  const quarter = rotation % 90 === 0
  if (lens || !quarter) return true
  return rotation !== 0 && scale !== 1
}

/** Names the maps' files: the same geometry on the same frame size is the same pair of maps. */
export function correctionMapKey(camera: Camera, width: number, height: number): string {
  // v1: the arithmetic below; bump it when that changes so old files are not reused.
  const { k1, k2, rotation, scale } = geometryOf(camera)
  return createHash('sha256').update(JSON.stringify(['v1', k1, k2, rotation, scale, width, height])).digest('hex').slice(0, 24)
}

/**
 * The maps of `camera`'s geometry for a `width` x `height` recording. Each output pixel is traced
 * back through the filters the chain used to run one after another, each as ffmpeg 5.1 computes it:
 * `scale` (pixel centres), `rotate` (about the frame's centre, the frame kept) or the transposes,
 * then `lenscorrection` (centre at floor(w/2), r² relative to a quarter of the diagonal squared).
 */
export function correctionMaps(camera: Camera, width: number, height: number): CorrectionMaps {
  const { k1, k2, rotation, scale } = geometryOf(camera)
  const out = correctedSize(camera, width, height)
  const quarter = rotation === 90 || rotation === 270
  // The picture after rotation and before scaling.
  const rw = quarter ? height : width
  const rh = quarter ? width : height
  const sx = rw / out.width
  const sy = rh / out.height
  const radians = (rotation * Math.PI) / 180
  const cos = Math.cos(radians)
  const sin = Math.sin(radians)
  const xc = Math.floor(width / 2)
  const yc = Math.floor(height / 2)
  const r2norm = 4 / (width * width + height * height)
  const x = new Uint16Array(out.width * out.height)
  const y = new Uint16Array(out.width * out.height)

  for (let j = 0; j < out.height; j++) {
    for (let i = 0; i < out.width; i++) {
      // Undo the scale: output pixel centre → position in the rotated picture.
      const px = scale === 1 ? i : (i + 0.5) * sx - 0.5
      const py = scale === 1 ? j : (j + 0.5) * sy - 0.5
      // Undo the rotation → position in the lens-corrected picture (the recording's size).
      let lx: number
      let ly: number
      if (rotation === 0) [lx, ly] = [px, py]
      else if (rotation === 90) [lx, ly] = [py, height - 1 - px] // transpose=clock
      else if (rotation === 180) [lx, ly] = [width - 1 - px, height - 1 - py] // hflip, vflip
      else if (rotation === 270) [lx, ly] = [width - 1 - py, px] // transpose=cclock
      else {
        const dx = px - (width - 1) / 2
        const dy = py - (height - 1) / 2
        lx = (width - 1) / 2 + cos * dx + sin * dy
        ly = (height - 1) / 2 - sin * dx + cos * dy
      }
      const n = j * out.width + i
      // rotate paints outside the turned frame black.
      if (lx < -0.5 || ly < -0.5 || lx > width - 0.5 || ly > height - 0.5) {
        x[n] = y[n] = UNMAPPED
        continue
      }
      // Undo the lens: the corrected pixel comes from m times its distance to the centre.
      const ox = lx - xc
      const oy = ly - yc
      const r2 = (ox * ox + oy * oy) * r2norm
      const m = 1 + k1 * r2 + k2 * r2 * r2
      const srcX = Math.round(xc + m * ox)
      const srcY = Math.round(yc + m * oy)
      if (srcX < 0 || srcY < 0 || srcX >= width || srcY >= height) {
        x[n] = y[n] = UNMAPPED
      } else {
        x[n] = srcX
        y[n] = srcY
      }
    }
  }
  return { width: out.width, height: out.height, x, y }
}

/** A map as a 16-bit binary PGM (big-endian samples, as the format says), which ffmpeg reads as gray16. */
export function pgm16(width: number, height: number, values: Uint16Array): Buffer {
  const header = Buffer.from(`P5\n${width} ${height}\n65535\n`, 'ascii')
  const body = Buffer.alloc(values.length * 2)
  for (let n = 0; n < values.length; n++) body.writeUInt16BE(values[n]!, n * 2)
  return Buffer.concat([header, body])
}
