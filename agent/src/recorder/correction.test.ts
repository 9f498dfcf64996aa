// The export's one-remap correction against the filter-per-setting chain exports used to run, through
// real ffmpeg: the same marked points land in the same places, and the same pixels get the same colours.
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Camera } from '@club/contract'
import { correctionMapFiles, MAPS_FOLDER } from './correction-map-files.js'
import { correctionMaps, needsRemap, pgm16 } from './correction-maps.js'
import { correctedSize, correctedVideo, correctionFilters, MAP_INPUT } from './pipeline.js'

const execFileAsync = promisify(execFile)
const WIDTH = 640
const HEIGHT = 360
const camera = (extra: Partial<Camera>): Camera => ({ id: 'cam-1', feed: 'rtsp://x/s', isEnabled: true, ...extra })

const dir = mkdtempSync(join(tmpdir(), 'club-agent-correction-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

/** One frame of a lavfi picture, as a recording holds it (yuv420p), through either chain, as raw pixels. */
async function render(picture: string, cam: Camera, chain: 'filter per setting' | 'remap', pixels: 'gray' | 'rgb24'): Promise<Buffer> {
  const source = ['-f', 'lavfi', '-i', `${picture},format=yuv420p`]
  let args: string[]
  if (chain === 'filter per setting') {
    args = [...source, '-vf', [...correctionFilters(cam), 'setsar=1', 'format=yuv420p'].join(',')]
  } else {
    const maps = await correctionMapFiles(dir, cam, WIDTH, HEIGHT)
    args = [...source, ...MAP_INPUT, '-i', maps.x, ...MAP_INPUT, '-i', maps.y, '-filter_complex', correctedVideo(cam, '0:v', 'out', [], ['setsar=1', 'format=yuv420p'], { x: '1:v', y: '2:v' }).join(';'), '-map', '[out]']
  }
  const { stdout } = await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', pixels, '-'], { encoding: 'buffer', maxBuffer: 64 << 20 })
  return stdout
}

/** Centroids of the bright blobs of a gray picture, weighted by brightness. */
function blobs(gray: Buffer, width: number, height: number): Array<{ x: number; y: number }> {
  const seen = new Uint8Array(width * height)
  const found: Array<{ x: number; y: number }> = []
  for (let start = 0; start < gray.length; start++) {
    if (seen[start] || gray[start]! < 100) continue
    let sum = 0, sx = 0, sy = 0
    const stack = [start]
    seen[start] = 1
    while (stack.length) {
      const n = stack.pop()!
      const x = n % width, y = Math.floor(n / width), w = gray[n]! - 16
      sum += w; sx += w * x; sy += w * y
      // Diagonal neighbours too: the nearest-pixel map may leave a mark touching only at a corner.
      for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) {
        const nx = x + dx, ny = y + dy, m = ny * width + nx
        if (nx >= 0 && ny >= 0 && nx < width && ny < height && !seen[m] && gray[m]! >= 40) {
          seen[m] = 1
          stack.push(m)
        }
      }
    }
    found.push({ x: sx / sum, y: sy / sum })
  }
  return found
}

// White 6x6 marks on black over the whole frame, corners included, where lens correction moves most.
const marks: Array<{ x: number; y: number }> = []
for (let y = 30; y < HEIGHT - 20; y += 50) for (let x = 40; x < WIDTH - 20; x += 70) marks.push({ x, y })
const marked = `color=c=black:size=${WIDTH}x${HEIGHT},${marks.map((m) => `drawbox=x=${m.x}:y=${m.y}:w=6:h=6:color=white:t=fill`).join(',')}`

const geometries: Array<[string, Partial<Camera>]> = [
  ['lens, a small turn and a scale (the benchmark camera)', { distortion1: 0.12, distortion2: 0.04, rotation: 3, scale: 0.9 }],
  ['barrel correction, a quarter turn and half size', { distortion1: -0.2, rotation: 90, scale: 0.5 }],
  ['an eighth of a turn the other way', { rotation: -45 }],
  ['half a turn and three quarters size', { rotation: 180, scale: 0.75 }],
  ['lens alone', { distortion2: -0.1 }]
]

for (const [name, settings] of geometries) {
  t.test(`geometry, ${name}: every mark lands within one pixel of where the filter chain puts it`, async (t) => {
    const cam = camera(settings)
    t.ok(needsRemap(cam), 'one remap does the geometry')
    const { width, height } = correctedSize(cam, WIDTH, HEIGHT)
    const reference = blobs(await render(marked, cam, 'filter per setting', 'gray'), width, height)
    const remapped = blobs(await render(marked, cam, 'remap', 'gray'), width, height)
    t.ok(reference.length >= marks.length * 0.6, `${reference.length} of ${marks.length} marks stay in the picture`)
    t.equal(remapped.length, reference.length, 'the same marks are in the picture')
    let worst = 0
    let moved = 0
    for (const r of reference) {
      const nearest = Math.min(...remapped.map((m) => Math.hypot(m.x - r.x, m.y - r.y)))
      worst = Math.max(worst, nearest)
      // Where the mark's centre was in the recording, had nothing moved it.
      moved = Math.max(moved, Math.min(...marks.map((m) => Math.hypot(m.x + 2.5 - r.x, m.y + 2.5 - r.y))))
    }
    t.ok(worst <= 1, `furthest apart: ${worst.toFixed(2)} px`)
    t.ok(moved > 3, `the correction moves marks (up to ${moved.toFixed(1)} px), so the comparison means something`)
  })
}

t.test('colours: the vignette and the LUT give the same pixels the same colours', async (t) => {
  // A grade as a court's LUT would be (a gentle curve, a warm tint, a little of blue in red), so a LUT
  // applied to other pixels, or not at all, would show.
  const size = 9
  const lines = [`LUT_3D_SIZE ${size}`]
  for (let b = 0; b < size; b++) for (let g = 0; g < size; g++) for (let r = 0; r < size; r++) {
    const [R, G, B] = [r / (size - 1), g / (size - 1), b / (size - 1)]
    lines.push([0.04 + 0.9 * R ** 0.9 + 0.04 * B, 0.02 + 0.95 * G ** 1.1, 0.06 + 0.88 * B].map((v) => v.toFixed(6)).join(' '))
  }
  const lutPath = join(dir, 'bend.cube')
  writeFileSync(lutPath, `${lines.join('\n')}\n`)
  const colours = ['0xd03020', '0x20a040', '0x3050e0', '0xf0f0f0', '0x808080', '0xe0c020', '0x20c0c0', '0xa030b0']
  const patches: string[] = []
  for (let row = 0; row < 4; row++) for (let col = 0; col < 8; col++) {
    patches.push(`drawbox=x=${col * 80}:y=${row * 90}:w=80:h=90:color=${colours[(row * 3 + col) % colours.length]}:t=fill`)
  }
  const cam = camera({ distortion1: 0.12, distortion2: 0.04, rotation: 3, scale: 0.9, vignette: 0.5, lutPath })
  const { width, height } = correctedSize(cam, WIDTH, HEIGHT)
  const picture = `color=c=black:size=${WIDTH}x${HEIGHT},${patches.join(',')}`
  const reference = await render(picture, cam, 'filter per setting', 'rgb24')
  const remapped = await render(picture, cam, 'remap', 'rgb24')
  // Compared where the reference is flat for 3 px around the pixel in every channel: at a patch's edge
  // the two chains' interpolations (bilinear and bicubic there, the nearest pixel here) blend
  // differently, and the filter chain moves the half-size chroma planes on their own grid (centres
  // and rounding in chroma pixels), which puts its colour edges up to 2 px off its luma edges.
  let compared = 0
  let worst = 0
  let total = 0
  const flat = (x: number, y: number) => {
    for (let c = 0; c < 3; c++) {
      let min = 255, max = 0
      for (let dy = -3; dy <= 3; dy++) for (let dx = -3; dx <= 3; dx++) {
        const v = reference[((y + dy) * width + x + dx) * 3 + c]!
        min = Math.min(min, v)
        max = Math.max(max, v)
      }
      if (max - min > 6) return false
    }
    return true
  }
  for (let y = 3; y < height - 3; y++) for (let x = 3; x < width - 3; x++) {
    if (!flat(x, y)) continue
    for (let c = 0; c < 3; c++) {
      const n = (y * width + x) * 3 + c
      const difference = Math.abs(reference[n]! - remapped[n]!)
      compared++
      total += difference
      worst = Math.max(worst, difference)
    }
  }
  t.ok(compared > width * height * 3 * 0.6, `${Math.round((compared / (width * height * 3)) * 100)}% of the samples compared`)
  // Not to the level: the LUT runs on planar float here (4x faster) and on 8-bit RGB there. The 8-bit
  // conversion rounds low (grey 0x808080 through this LUT: exact 138.8 118.7 128.0, float 137 117 127,
  // 8-bit 136 116 126), about 1.5 levels on average, a few more where the LUT is steep.
  t.ok(total / compared <= 2, `mean difference ${(total / compared).toFixed(2)} of 255`)
  t.ok(worst <= 12, `largest difference ${worst} of 255`)
})

t.test('maps are made once per setting and frame size, beside the recordings', async (t) => {
  const recordings = join(dir, 'recordings')
  const cam = camera({ distortion1: 0.1, rotation: 5 })
  const first = await correctionMapFiles(recordings, cam, 320, 240)
  t.match(first.x, join(recordings, MAPS_FOLDER))
  const again = await correctionMapFiles(recordings, { ...cam, id: 'cam-2', name: 'another court' }, 320, 240)
  t.same(again, first, 'another camera with the same geometry shares them')
  t.not((await correctionMapFiles(recordings, cam, 640, 480)).x, first.x, 'another frame size has its own')
  t.not((await correctionMapFiles(recordings, { ...cam, rotation: 6 }, 320, 240)).x, first.x, 'another setting has its own')
  const maps = correctionMaps(cam, 320, 240)
  t.same(readFileSync(first.x), pgm16(maps.width, maps.height, maps.x), 'the file is the computed map')
})
