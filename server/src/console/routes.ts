// The admin console: a page, not API. It is served here so that it needs no other web server and
// loads nothing from another origin (venues and club desks are often offline), and it calls only the
// public API with the signed-in user's token. Kept out of the OpenAPI document (hide).
import type { FastifyInstance } from 'fastify'
import { servePage } from '../pages.js'

export default async function consoleRoutes(app: FastifyInstance): Promise<void> {
  servePage(app, 'console', '/console')
}
