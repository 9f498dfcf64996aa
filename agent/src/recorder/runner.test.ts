import t from 'tap'
import { splitArgs } from './runner.js'

t.test('a flat argument list splits into inputs with their options, and the output', async (t) => {
  t.same(splitArgs(['-hide_banner', '-re', '-i', 'a.mkv', '-f', 'concat', '-i', 'list', '-map', '0:v', '-vf', 'scale=1:2, x', 'out.mp4']), {
    inputs: [{ options: ['-hide_banner', '-re'], source: 'a.mkv' }, { options: ['-f', 'concat'], source: 'list' }],
    outputOptions: ['-map', '0:v', '-vf', 'scale=1:2, x'],
    target: 'out.mp4'
  })
})
