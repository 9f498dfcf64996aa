import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { templateRoutes, type Template } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { sendAnswer } from '../reply.js'
import { createTemplate, createTemplateFromEvent, createTemplateFromSeries, deleteTemplate, etagOf, getKeptTemplate, getVersion, listVersions, patchTemplate, rollbackTemplate } from './service.js'
import { listKeptTemplates } from './list.js'

/** Every single-template answer carries its version as the ETag. */
function withEtag(reply: FastifyReply, template: Template, status = 200): Template {
  reply.code(status).header('etag', etagOf(template.version))
  return template
}

const templates: FastifyPluginAsyncTypebox = async (app) => {
  // Checked on request, before the body is parsed and validated: who may call comes first, so an
  // anonymous or member request never learns what a valid body looks like.
  const onRequest = app.auth.bearer({ roles: ['staff', 'admin'] })

  app.route({
    ...templateRoutes.list,
    onRequest,
    handler: async (request, reply) => sendAnswer(reply, await listKeptTemplates(app.db, request.query))
  })

  app.route({
    ...templateRoutes.create,
    onRequest,
    handler: async (request, reply) => withEtag(reply, await createTemplate(app.db, request.body, currentUser(request), app.clock), 201)
  })

  app.route({
    ...templateRoutes.get,
    onRequest,
    handler: async (request, reply) => {
      const template = await getKeptTemplate(app.db, request.params.id)
      return sendAnswer(reply.header('etag', etagOf(template.version)), template)
    }
  })

  app.route({
    ...templateRoutes.patch,
    onRequest,
    handler: async (request, reply) =>
      withEtag(reply, await patchTemplate(app.db, request.params.id, request.body, currentUser(request), app.clock, request.headers['if-match']))
  })

  app.route({
    ...templateRoutes.delete,
    onRequest,
    handler: async (request, reply) => {
      await deleteTemplate(app.db, request.params.id, request.headers['if-match'], app.clock)
      return reply.code(204).send(null)
    }
  })

  app.route({ ...templateRoutes.versions, onRequest, handler: async (request) => listVersions(app.db, request.params.id) })

  app.route({
    ...templateRoutes.version,
    onRequest,
    handler: async (request) => getVersion(app.db, request.params.id, request.params.version)
  })

  app.route({
    ...templateRoutes.rollback,
    onRequest,
    handler: async (request, reply) =>
      withEtag(
        reply,
        await rollbackTemplate(app.db, request.params.id, request.body.version, currentUser(request), app.clock, request.headers['if-match'])
      )
  })

  app.route({
    ...templateRoutes.fromEvent,
    onRequest,
    handler: async (request, reply) =>
      withEtag(reply, await createTemplateFromEvent(app.db, request.params.eventId, request.body, currentUser(request), app.clock), 201)
  })

  app.route({
    ...templateRoutes.fromSeries,
    onRequest,
    handler: async (request, reply) =>
      withEtag(reply, await createTemplateFromSeries(app.db, request.params.seriesId, request.body, currentUser(request), app.clock), 201)
  })
}

export default templates
