import t from 'tap'
import type { Camera } from '@club/contract'
import { correctionMapKey, correctionMaps, needsRemap, pgm16, UNMAPPED } from './correction-maps.js'

const camera = (extra: Partial<Camera> = {}): Camera => ({ id: 'cam-1', feed: 'rtsp://x/s', isEnabled: true, ...extra })
const at = (maps: ReturnType<typeof correctionMaps>, i: number, j: number) => [maps.x[j * maps.width + i], maps.y[j * maps.width + i]]

t.test('a remap when the geometry would take more than one exact pass', async (t) => {
  t.notOk(needsRemap(camera()), 'nothing to move')
  t.notOk(needsRemap(camera({ rotation: 90 })), 'a lone quarter turn stays a transpose')
  t.notOk(needsRemap(camera({ scale: 0.5 })), 'a lone scale stays bicubic')
  t.notOk(needsRemap(camera({ vignette: 0.5, lutPath: '/l.cube' })), 'colours are not geometry')
  t.ok(needsRemap(camera({ distortion1: 0.1 })))
  t.ok(needsRemap(camera({ rotation: 3 })))
  t.ok(needsRemap(camera({ rotation: 180, scale: 0.5 })))
})

t.test('quarter turns and flips move whole pixels', async (t) => {
  const clock = correctionMaps(camera({ rotation: 90, distortion1: 0 }), 4, 2)
  t.same([clock.width, clock.height], [2, 4])
  t.same(at(clock, 0, 0), [0, 1], 'top-left of a clockwise turn is the bottom-left of the recording')
  t.same(at(clock, 1, 0), [0, 0])
  const half = correctionMaps(camera({ rotation: 180 }), 4, 2)
  t.same(at(half, 0, 0), [3, 1])
  const counter = correctionMaps(camera({ rotation: 270 }), 4, 2)
  t.same(at(counter, 0, 0), [3, 0])
})

t.test('a half scale samples pixel centres; a turn leaves the corners outside the picture unmapped', async (t) => {
  const half = correctionMaps(camera({ scale: 0.5, rotation: 180 }), 8, 4)
  t.same([half.width, half.height], [4, 2])
  // Output pixel 0's centre is 0.5 in the turned picture, 6.5 and 2.5 in the recording: the nearest
  // pixel (rounding up) is 7, 3.
  t.same(at(half, 0, 0), [7, 3])
  const turned = correctionMaps(camera({ rotation: 45 }), 64, 32)
  t.same(at(turned, 0, 0), [UNMAPPED, UNMAPPED])
  t.same(at(turned, 32, 16), [32, 16], 'the centre stays')
})

t.test('lens correction moves pixels along the radius, the centre not at all', async (t) => {
  const lens = correctionMaps(camera({ distortion1: 0.2 }), 100, 100)
  t.same(at(lens, 50, 50), [50, 50])
  // r² = 40² / (100² + 100²) · 4 = 0.32; m = 1.064; 40 px out comes from 42.56 px out.
  t.same(at(lens, 90, 50), [93, 50])
})

t.test('the key follows the geometry and the frame size, nothing else', async (t) => {
  const key = correctionMapKey(camera({ distortion1: 0.1 }), 1280, 720)
  t.equal(correctionMapKey(camera({ id: 'cam-9', distortion1: 0.1, vignette: 0.4, lutPath: '/x.cube' }), 1280, 720), key)
  t.equal(correctionMapKey(camera({ distortion1: 0.1, rotation: 360 }), 1280, 720), key, 'a whole turn is no turn')
  t.not(correctionMapKey(camera({ distortion1: 0.1 }), 1920, 1080), key)
  t.not(correctionMapKey(camera({ distortion1: 0.11 }), 1280, 720), key)
})

t.test('maps are 16-bit PGM, big-endian', async (t) => {
  const file = pgm16(2, 1, Uint16Array.from([1, 0x1234]))
  t.same(file, Buffer.concat([Buffer.from('P5\n2 1\n65535\n'), Buffer.from([0, 1, 0x12, 0x34])]))
})
