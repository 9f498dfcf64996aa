// The remap maps of a camera's geometry on disk, beside the recordings: made by the first export that
// needs them, then read by every export until the setting or the frame size changes.
import { randomUUID } from 'node:crypto'
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Camera } from '@club/contract'
import { correctionMapKey, correctionMaps, pgm16 } from './correction-maps.js'

/** The folder in the recordings folder that holds the maps (not a camera's: it has no segments). */
export const MAPS_FOLDER = '.correction-maps'

/** Paths of the x and y maps for `camera` at `width` x `height`, written now if missing. */
export async function correctionMapFiles(recordingsDir: string, camera: Camera, width: number, height: number): Promise<{ x: string; y: string }> {
  const dir = join(recordingsDir, MAPS_FOLDER)
  const key = correctionMapKey(camera, width, height)
  const paths = { x: join(dir, `${key}.x.pgm`), y: join(dir, `${key}.y.pgm`) }
  if (await exists(paths.y)) return paths
  await mkdir(dir, { recursive: true })
  const maps = correctionMaps(camera, width, height)
  // Written aside and renamed, y last: two exports racing both write whole files, and a y map on
  // disk means its x map is whole too.
  for (const axis of ['x', 'y'] as const) {
    const temporary = `${paths[axis]}.${randomUUID()}.tmp`
    try {
      await writeFile(temporary, pgm16(maps.width, maps.height, maps[axis]))
      await rename(temporary, paths[axis])
    } finally {
      await rm(temporary, { force: true })
    }
  }
  return paths
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path)
    return true
  } catch {
    return false
  }
}
