// The text of kept answers (reply.ts): made once per object and route, never shared across routes
// whose schemas differ, and never kept for an object a route did not send.
import Fastify from 'fastify'
import t from 'tap'
import { createHash } from 'node:crypto'
import { serializerCompiler } from './plugins/serialization.js'
import { answerWithEtag, sendAnswer, sendSharedAnswer, sentEtag } from './reply.js'

const Full = { type: 'object', properties: { id: { type: 'string' }, secret: { type: 'string' } } }
const Public = { type: 'object', properties: { id: { type: 'string' } } }

async function appWith(kept: { id: string; secret: string }) {
  const app = Fastify()
  app.setSerializerCompiler(serializerCompiler)
  app.get('/full', { schema: { response: { 200: Full } } }, async (_request, reply) => sendAnswer(reply, kept))
  app.get('/public', { schema: { response: { 200: Public } } }, async (_request, reply) => sendAnswer(reply, kept))
  app.get('/etag', { schema: { response: { 200: Public } } }, async (_request, reply) => {
    const before = sentEtag(reply, kept)
    const { etag } = answerWithEtag(reply, kept)
    return sendAnswer(reply.header('etag', etag).header('x-before', String(before)), kept)
  })
  app.get<{ Querystring: { user: string } }>('/shared', { schema: { response: { 200: Full } } }, async (request, reply) =>
    sendSharedAnswer(reply, { shared: { id: 'USER', secret: 'for USER only' }, placeholder: 'USER', value: request.query.user })
  )
  t.teardown(() => app.close())
  return app
}

t.test('one object sent by two routes with different schemas gets each route its own text', async (t) => {
  const kept = { id: 'a', secret: 'only in the full answer' }
  const app = await appWith(kept)
  t.same((await app.inject('/full')).json(), kept)
  const pub = await app.inject('/public')
  t.same(pub.json(), { id: 'a' }, 'the public route never sends the text the full route made')
  t.equal(pub.headers['content-type'], 'application/json; charset=utf-8')
  t.same((await app.inject('/full')).json(), kept, 'and the full route still has its own')
})

t.test("an ETag is the hash of exactly the route's text, and none is known before the answer was sent", async (t) => {
  const kept = { id: 'b', secret: 'x' }
  const app = await appWith(kept)
  const first = await app.inject('/etag')
  t.equal(first.headers['x-before'], 'undefined', 'nothing sent yet: no ETag a client could hold')
  t.equal(first.headers.etag, `"${createHash('sha256').update('{"id":"b"}').digest('hex')}"`)
  const second = await app.inject('/etag')
  t.equal(second.headers['x-before'], first.headers.etag)
})

t.test('a shared answer is sent with each caller’s value in place of the placeholder', async (t) => {
  const app = await appWith({ id: 'c', secret: 'y' })
  t.same((await app.inject('/shared?user=ada')).json(), { id: 'ada', secret: 'for ada only' })
  t.same((await app.inject('/shared?user=bob')).json(), { id: 'bob', secret: 'for bob only' })
  // A value is text inside a JSON string: a quote or a backslash in it cannot end the string.
  const odd = 'b"o\\b'
  t.same((await app.inject(`/shared?user=${encodeURIComponent(odd)}`)).json(), { id: odd, secret: `for ${odd} only` })
})
