// ffmpeg's last stderr lines, as real ffmpeg 5/6 runs wrote them against a missing file, a refused
// port, a camera answering 401 or 404, a listener that never answers, garbage, an unknown host: the
// phrase an operator reads, and never a feed's credentials.
import t from 'tap'
import { PROBLEM_MAX_LENGTH, summariseFfmpegError, withoutCredentials } from './problem.js'

const table: Array<[string, string, string | null]> = [
  ['a missing file', '/var/lib/club/feeds/court-1.mp4: No such file or directory', 'no such file'],
  [
    'a refused RTSP port',
    '[tcp @ 0x55906f33d800] Connection to tcp://127.0.0.1:554?timeout=2000000 failed: Connection refused\nrtsp://admin:s3cret@127.0.0.1:554/stream: Connection refused',
    'connection refused'
  ],
  [
    'an HTTP camera refusing the credentials',
    '[http @ 0x55b4da3bd140] HTTP error 401 Unauthorized\nhttp://user:pw@10.0.0.9/video: Server returned 401 Unauthorized (authorization failed)',
    '401 from the camera'
  ],
  [
    'an RTSP camera refusing the credentials',
    '[rtsp @ 0x5581f0a3c2c0] method DESCRIBE failed: 401 Unauthorized\nrtsp://admin:wrong@10.0.0.9:554/h264: Server returned 401 Unauthorized (authorization failed)',
    '401 from the camera'
  ],
  ['a wrong path', '[http @ 0x55b0a2b63140] HTTP error 404 Not Found\nhttp://10.0.0.9/404: Server returned 404 Not Found', '404 from the camera'],
  ['a camera that never answers', 'http://10.0.0.9:8080/x: Connection timed out', 'connection timed out'],
  [
    'an RTSP listener that speaks no RTSP',
    'rtsp://admin:s3cret@127.0.0.1:18778/stream: Invalid data found when processing input',
    'invalid data from the camera'
  ],
  [
    'garbage instead of video',
    '[mov,mp4,m4a,3gp,3g2,mj2 @ 0x559ed0583880] moov atom not found\ngarbage.mp4: Invalid data found when processing input',
    'invalid data from the camera'
  ],
  [
    'an unknown host',
    '[tcp @ 0x561016bc6800] Failed to resolve hostname cam.invalid: Name or service not known\nrtsp://admin:pw@cam.invalid/stream: Input/output error',
    "the camera's host name is not known"
  ],
  ['lines joined as the supervisor keeps them', 'Input #0 | rtsp://a:b@10.0.0.9/x: Connection refused | Exiting normally', 'connection refused'],
  ['nothing at all', '', null],
  ['only progress', 'frame=  100 fps= 25 q=-1.0 size=N/A time=00:00:04.00 bitrate=N/A speed=   1x\n', null]
]

t.test("ffmpeg's reasons become short phrases", async (t) => {
  for (const [what, stderr, phrase] of table) t.equal(summariseFfmpegError(stderr), phrase, what)
})

t.test('a password or a path holding "401" or "timed out" does not make the phrase', async (t) => {
  t.equal(summariseFfmpegError('rtsp://admin:401timed out@10.0.0.9/401: Connection refused'), 'connection refused')
})

t.test("anything else is ffmpeg's last meaningful line, without its [demuxer @ 0x…] and the URL's credentials, at most 200 characters", async (t) => {
  t.equal(
    summariseFfmpegError('[segment @ 0x55d1c0e1a2c0] Opening \'x\' for writing\n[rtsp @ 0x55d1c0e1a2c0] Nonmatching transport in server reply'),
    'Nonmatching transport in server reply'
  )
  const long = summariseFfmpegError(`rtsp://admin:hunter2@10.0.0.9:554/cam?token=abc123 ${'x'.repeat(400)}: Something unheard of`)!
  t.ok(long.length <= PROBLEM_MAX_LENGTH, `${long.length} characters`)
  t.ok(long.startsWith('rtsp://10.0.0.9:554/cam '), long.slice(0, 40))
})

t.test('no phrase ever holds a URL\'s user, password or query', async (t) => {
  const secrets = ['admin', 's3cret', 'hunter2', 'p@ss/w0rd', 'tok3n']
  const lines = [
    'rtsp://admin:s3cret@10.0.0.9:554/stream: Protocol not found',
    '[rtsp @ 0x1] Could not find codec parameters for rtsp://admin:hunter2@10.0.0.9/a',
    'rtsps://admin:p@ss/w0rd@10.0.0.9/live: weird failure',
    'http://10.0.0.9/mjpeg?user=admin&token=tok3n: Server returned 5XX Server Error reply but unusual',
    'Error opening input file rtsp://admin:s3cret@10.0.0.9/x.'
  ]
  for (const line of lines) {
    const phrase = summariseFfmpegError(line) ?? ''
    for (const secret of secrets) t.notOk(phrase.includes(secret), `"${phrase}" holds no "${secret}"`)
  }
  t.equal(withoutCredentials('at rtsp://u:p@h:554/x?a=1 and http://h/y#frag'), 'at rtsp://h:554/x and http://h/y')
})
