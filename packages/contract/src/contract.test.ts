import t from 'tap'
import { Value } from 'typebox/value'
import * as contract from './index.js'

t.test('every route declares its error answers in the platform shape', async (t) => {
  const groups = Object.entries(contract).filter(([name]) => /Routes$/.test(name)) as Array<[string, Record<string, contract.RouteContract>]>
  t.ok(groups.length >= 4)
  for (const [group, routes] of groups) {
    // The operator's probes and scrape (healthRoutes) sit where load balancers and Prometheus look
    // for them, outside the API's prefix; the liveness probe has no failure to declare (a process
    // that cannot answer gives no answer at all).
    const operations = group === 'healthRoutes'
    for (const [name, route] of Object.entries(routes)) {
      t.match(route.url, operations ? /^\/(health\/|metrics$)/ : /^\/apis\/v2\//, `${group}.${name} lives under ${operations ? '/health or /metrics' : '/apis/v2/'}`)
      const errors = Object.keys(route.schema.response).filter((s) => Number(s) >= 400)
      if (!(operations && name === 'live')) t.ok(errors.length > 0, `${group}.${name} declares at least one error answer`)
    }
  }
})

t.test('a replay-server configuration is held to the ranges ffmpeg accepts', async (t) => {
  const camera = { id: 'cam-1', feed: 'rtsp://10.0.0.5/stream', isEnabled: true }
  t.ok(Value.Check(contract.ReplayServerConfig, { cleanupEnabled: true, cameras: [camera] }))
  for (const bad of [
    { ...camera, feed: 'ftp://x' },
    { ...camera, distortion1: 1.5 },
    { ...camera, rotation: 400 },
    { ...camera, scale: 0.05 },
    { ...camera, vignette: 2 },
    { ...camera, videoCodec: 'vp9' },
    { ...camera, colour: 'red' }
  ]) {
    t.notOk(Value.Check(contract.ReplayServerConfig, { cleanupEnabled: true, cameras: [bad] }), JSON.stringify(bad))
  }
})

t.test('the error body has exactly the platform fields', async (t) => {
  t.ok(Value.Check(contract.ErrorBody, { statusCode: 404, message: 'template x not found', error: 'Not Found' }))
  t.notOk(Value.Check(contract.ErrorBody, { statusCode: 404, error: 'Not Found' }))
})
