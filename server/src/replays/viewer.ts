// Who a replay or match request comes from, as the replay and match routes both read it: a court
// page's guest (its session) or a signed-in user, and, for the footage access log, from where.
import type { FastifyRequest } from 'fastify'
import { currentUser } from '../plugins/auth.js'
import type { Viewer } from '../footage-access/service.js'
import type { Requester } from './replay.js'

export function requesterOf(request: FastifyRequest): Requester {
  return request.principal?.kind === 'guest' ? { guestId: request.principal.guestId } : currentUser(request)
}

export function viewerOf(request: FastifyRequest): Viewer {
  return { who: requesterOf(request), address: request.ip }
}
