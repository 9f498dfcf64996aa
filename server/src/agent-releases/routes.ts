// Agent releases: the admin's upload (the package and its offline signature) and list, the trusted
// release keys' public halves (for a box's setup) and the boxes' download (device access token;
// Range, so a cut download resumes).
import { createReadStream } from 'node:fs'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { RELEASE_SIGNATURE_HEADER, agentReleaseRoutes as routes } from '@club/contract'
import { BadRequestError, HttpError } from '../errors.js'
import { addAgentReleaseBytes, byteRange, listAgentReleases, releaseFile, trustedReleaseKeys } from './service.js'

const PACKAGE_TYPES = ['application/vnd.debian.binary-package', 'application/octet-stream']

const agentReleases: FastifyPluginAsyncTypebox = async (app) => {
  const settings = app.config
  const admin = app.auth.bearer({ roles: ['admin'] })

  // Encapsulated: only this plugin's routes take a package body, and only up to its own limit.
  app.addContentTypeParser(PACKAGE_TYPES, { parseAs: 'buffer', bodyLimit: settings.AGENT_RELEASE_MAX_BYTES }, (_request, body, done) =>
    done(null, body)
  )

  app.route({
    ...routes.create,
    onRequest: admin,
    bodyLimit: settings.AGENT_RELEASE_MAX_BYTES,
    handler: async (request, reply) => {
      if (!Buffer.isBuffer(request.body) || request.body.length === 0) {
        throw new BadRequestError(`send the .deb itself as the body, with Content-Type ${PACKAGE_TYPES[0]}`)
      }
      const signature = request.headers[RELEASE_SIGNATURE_HEADER]
      if (!signature) {
        throw new BadRequestError(`the package comes without its signature: sign it offline (club agent-releases sign FILE --key KEY) and send FILE.sig's text in ${RELEASE_SIGNATURE_HEADER}`)
      }
      const release = await addAgentReleaseBytes(app.db, request.body, signature, settings, app.clock)
      return reply.code(201).send(release)
    }
  })

  app.route({ ...routes.list, onRequest: admin, handler: async () => listAgentReleases(app.db) })

  app.route({ ...routes.key, handler: async () => trustedReleaseKeys(settings) })

  app.route({
    ...routes.download,
    onRequest: app.auth.device(),
    handler: async (request, reply) => {
      const file = await releaseFile(app.db, request.params.version, request.params.architecture, settings)
      const range = byteRange(request.headers.range, file.size)
      reply.header('accept-ranges', 'bytes').header('cache-control', 'no-store').type('application/vnd.debian.binary-package')
      if (range === 'unsatisfiable') {
        throw new HttpError(416, `the range ${request.headers.range} is outside the package's ${file.size} bytes`, { 'content-range': `bytes */${file.size}` })
      }
      if (!range) return reply.header('content-length', file.size).send(createReadStream(file.path) as never)
      return reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
        .header('content-length', range.end - range.start + 1)
        .send(createReadStream(file.path, { start: range.start, end: range.end }) as never)
    }
  })
}

export default agentReleases
