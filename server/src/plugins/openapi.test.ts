import t from 'tap'
import * as contract from '@club/contract'
import type { RouteContract } from '@club/contract'
import { testApp } from '../test-support/app.js'

// Every route group the contract declares (`…Routes` exports).
const groups = Object.entries(contract).filter(([name]) => /Routes$/.test(name)) as Array<[string, Record<string, RouteContract>]>

t.test('every served contract route is in /documentation/json with its schemas', async (t) => {
  const ctx = await testApp(t)
  const res = await ctx.app.inject({ url: '/documentation/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  let served = 0
  const unserved: string[] = []
  const declared = new Set<string>()
  for (const [group, routes] of groups) {
    for (const [name, route] of Object.entries(routes)) {
      declared.add(`${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`)
      if (!ctx.app.hasRoute({ method: route.method, url: route.url })) {
        unserved.push(`${group}.${name}`)
        continue
      }
      served++
      const path = route.url.replace(/:(\w+)/g, '{$1}')
      const operation = doc.paths[path]?.[route.method.toLowerCase()]
      t.ok(operation, `${group}.${name}: ${route.method} ${path} is documented`)
      if (!operation) continue
      for (const status of Object.keys(route.schema.response)) {
        t.ok(operation.responses[status], `${group}.${name} documents its ${status} answer`)
      }
      if (route.schema.body) t.ok(operation.requestBody, `${group}.${name} documents its body`)
    }
  }
  t.ok(served >= 3, `${served} contract routes are served`)
  t.same(unserved, [], 'every contract route is served')

  // And the other way: every API operation in the document comes from the contract.
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    if (!path.startsWith('/apis/v2/')) continue
    for (const method of Object.keys(operations)) {
      t.ok(declared.has(`${method.toUpperCase()} ${path}`), `${method.toUpperCase()} ${path} is declared in the contract`)
    }
  }
  const ui = await ctx.app.inject({ url: '/documentation/' })
  t.equal(ui.statusCode, 200)
})

// Generated clients name their methods after these: renaming one breaks every integrator's code, so the
// list is held here and a change to it is a deliberate one.
const servedOperationIds = [
  'approveReplayServer',
  'approveReplayServerClaim',
  'cancelAgentRollout',
  'cancelMembershipSubscription',
  'cancelPackage',
  'cancelPackageRedemption',
  'confirmFootageDeletion',
  'confirmMembershipSubscription',
  'confirmOrder',
  'createAgentRelease',
  'createAgentRollout',
  'createArea',
  'createAuthorization',
  'createCourt',
  'createCurrentUserRedemption',
  'createDoNotFilmInterval',
  'createEvent',
  'createFootageTakedown',
  'createForumConnectAuthorization',
  'createMembership',
  'createMembershipEnrollment',
  'createMembershipEnrollmentAcceptance',
  'createMembershipEnrollmentInvitationAnswer',
  'createMembershipSubscription',
  'createMembershipSubscriptionPause',
  'createOrder',
  'createPackage',
  'createPackageRedemption',
  'createPackageRedemptionGiveBack',
  'createPhoneVerification',
  'createPod',
  'createProduct',
  'createRegion',
  'createReplay',
  'createReplayGuestSession',
  'createReplayTakedown',
  'createSeries',
  'createTemplate',
  'createTemplateFromEvent',
  'createTemplateFromSeries',
  'createToken',
  'createWebhookEndpoint',
  'createWebviewToken',
  'deleteArea',
  'deleteCourt',
  'deleteCurrentUser',
  'deleteDoNotFilmInterval',
  'deleteEvent',
  'deleteMembership',
  'deleteMembershipEnrollment',
  'deletePod',
  'deleteProduct',
  'deleteRegion',
  'deleteReplay',
  'deleteReplayServer',
  'deleteSeries',
  'deleteTemplate',
  'deleteWebhookEndpoint',
  'endMembershipSubscriptionPause',
  'getAgentReleaseKey',
  'getAgentReleasePackage',
  'getAgentRollout',
  'getArea',
  'getAreaSessionPeriods',
  'getCourt',
  'getCourtSign',
  'getCurrentUser',
  'getCurrentUserPaymentMethod',
  'getEvent',
  'getFleetSummary',
  'getFootageNotice',
  'getFootageTakedown',
  'getLiveness',
  'getMatch',
  'getMembership',
  'getMembershipEnrollment',
  'getMembershipEnrollmentInvitationByToken',
  'getMembershipSubscription',
  'getMembershipSubscriptionPause',
  'getMetrics',
  'getOrder',
  'getPackage',
  'getPackageRedemption',
  'getPod',
  'getProduct',
  'getReadiness',
  'getRegion',
  'getReplay',
  'getReplayDownload',
  'getReplayServer',
  'getReplayServerCameraSnapshot',
  'getReplayServerStatus',
  'getSeries',
  'getTemplate',
  'getTemplateVersion',
  'getWebhookEndpoint',
  'listAgentReleases',
  'listAgentRollouts',
  'listAreas',
  'listCourts',
  'listDeviceReplays',
  'listDoNotFilmIntervals',
  'listEndpointDeliveries',
  'listEventFeed',
  'listEvents',
  'listFootageAccess',
  'listFootageTakedowns',
  'listJobRuns',
  'listMatches',
  'listMembershipEnrollments',
  'listMembershipSubscriptionEnrollments',
  'listMembershipSubscriptionPauses',
  'listMembershipSubscriptions',
  'listMemberships',
  'listMembershipsOnSale',
  'listOrders',
  'listPackageRedemptions',
  'listPackages',
  'listPods',
  'listProductOfferings',
  'listProducts',
  'listProductsOnSale',
  'listRegions',
  'listReplayServers',
  'listReplays',
  'listSeries',
  'listSummaries',
  'listTemplateVersions',
  'listTemplates',
  'listWebhookEndpoints',
  'pauseAgentRollout',
  'registerReplayServer',
  'rejectReplayServer',
  'rejectReplayServerClaim',
  'requestPasswordReset',
  'resetPassword',
  'resumeAgentRollout',
  'retryEndpointDelivery',
  'revokeReplayServer',
  'revokeToken',
  'rollbackTemplate',
  'rotateReplayServerToken',
  'rotateWebhookEndpointSecret',
  'runCourtLockingJob',
  'runMembershipJob',
  'runReminderJob',
  'runReplayCleanupJob',
  'runSummaryJob',
  'runUserCleanupJob',
  'setAreaSessionPeriods',
  'setDeviceReplayStatus',
  'setReplayServerConfig',
  'setReplayServerTargetVersion',
  'updateArea',
  'updateCourt',
  'updateEvent',
  'updateMembership',
  'updateMembershipSubscription',
  'updatePackage',
  'updatePod',
  'updateProduct',
  'updateRegion',
  'updateSeries',
  'updateTemplate',
  'updateWebhookEndpoint',
  'withdrawMembershipSubscriptionCancellation'
]

// The verbs of the convention in packages/contract/README.md.
const convention = /^(list|get|create|update|delete|set|register|approve|reject|revoke|rotate|rollback|request|reset|export|confirm|run|cancel|withdraw|end|retry|pause|resume)[A-Z][A-Za-z]*$/

t.test('every operation has a unique, stable operationId by the convention', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
  const served: string[] = []
  for (const operations of Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>)) {
    for (const operation of Object.values(operations)) served.push(operation.operationId ?? '(none)')
  }
  t.same([...served].sort(), servedOperationIds, 'the served operationIds are the held list')

  // Routes declared but not served here (the deprecated list, the box's local API) follow it too.
  const all = [...groups, ['agentLocalApi', contract.agentLocalApi] as [string, Record<string, RouteContract>]]
  const ids = all.flatMap(([, routes]) => Object.values(routes).map((route) => route.schema.operationId))
  t.equal(new Set(ids).size, ids.length, 'no two routes share an operationId')
  for (const id of ids) t.match(id, convention, `${id} is a verb of the convention and a noun`)
  t.same(
    Object.values(contract.agentLocalApi).map((route) => route.schema.operationId),
    [
      'getAgentLiveness',
      'getAgentHealth',
      'listAgentCameras',
      'getAgentCameraSnapshot',
      'exportAgentClip',
      'listAgentClipExports',
      'getAgentClipExport',
      'runAgentReplayRequests',
      'createAgentSession',
      'deleteAgentSession'
    ]
  )
})

t.test('every operation states its security; the open ones say so with []', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
  const open: string[] = []
  for (const operations of Object.values(doc.paths as Record<string, Record<string, { operationId: string; security?: unknown[] }>>)) {
    for (const operation of Object.values(operations)) {
      t.ok(Array.isArray(operation.security), `${operation.operationId} declares security`)
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement as object)) t.ok(doc.components.securitySchemes[scheme], `${operation.operationId}: ${scheme} is declared`)
      }
      if (operation.security?.length === 0) open.push(operation.operationId)
    }
  }
  // getReplayDownload: a file:// replay's signed link, the signature its credential. createReplayGuestSession: a
  // court page's guest (REPLAYS_GUEST), limited per address. getAgentReleaseKey: the public key a box checks
  // releases with. getFootageNotice: what the club records of its courts, for anyone filmed.
  // getMembershipEnrollmentInvitationByToken, createMembershipEnrollmentInvitationAnswer: the invitation
  // mail's token is their credential, limited per client IP.
  t.same(open.sort(), [
    'createMembershipEnrollmentInvitationAnswer', 'createPhoneVerification', 'createReplayGuestSession', 'getAgentReleaseKey', 'getFootageNotice', 'getLiveness',
    'getMembershipEnrollmentInvitationByToken', 'getReadiness', 'getReplayDownload', 'getReplayServerStatus', 'registerReplayServer', 'requestPasswordReset',
    'resetPassword'
  ])
  // Confidential clients authenticate with HTTP Basic; public clients and the password grant send none. A client's
  // token is revoked with the client's authentication (RFC 7009 section 2.1); a client-less token is its own credential.
  t.same(doc.paths['/apis/v2/oauth2/token'].post.security, [{ clientBasic: [] }, {}])
  t.same(doc.paths['/apis/v2/oauth2/revoke'].post.security, [{ clientBasic: [] }, {}])
  t.same(doc.components.securitySchemes.clientBasic, { type: 'http', scheme: 'basic', description: contract.securitySchemes.clientBasic.description })

  // And the guards agree: an open route answers without a credential, a Bearer route refuses.
  const status = await ctx.app.inject({ url: '/apis/v2/replay-servers/device/unknown/status' })
  t.equal(status.statusCode, 404, 'the status poll needs no credential (an unknown serverId is 404, not 401)')
  const templates = await ctx.app.inject({ url: '/apis/v2/templates' })
  t.equal(templates.statusCode, 401)
})

t.test('servers, licence, contact and tags', async (t) => {
  await t.test('an operator who set nothing gets a relative server and the default licence', async (t) => {
    const ctx = await testApp(t)
    const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
    t.same(doc.servers, [{ url: '/' }], 'not the development default http://localhost:3000')
    t.same(doc.info.license, { name: 'Proprietary' })
    t.notOk(doc.info.contact, 'no contact unless one is set')
    const declared = new Set((doc.tags as Array<{ name: string; description: string }>).map((tag) => tag.name))
    for (const tag of doc.tags) t.ok(tag.description, `tag ${tag.name} is described`)
    for (const operations of Object.values(doc.paths as Record<string, Record<string, { operationId: string; tags?: string[] }>>)) {
      for (const operation of Object.values(operations)) {
        for (const tag of operation.tags ?? []) t.ok(declared.has(tag), `${operation.operationId}: tag ${tag} is declared`)
      }
    }
  })
  await t.test('an operator who set them gets theirs', async (t) => {
    const ctx = await testApp(t, {
      PUBLIC_BASE_URL: 'https://api.club.test/',
      API_LICENSE_NAME: 'Club API terms',
      API_LICENSE_URL: 'https://club.test/api-terms',
      API_CONTACT_EMAIL: 'api@club.test',
      API_CONTACT_URL: 'https://club.test/developers'
    })
    const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
    t.same(doc.servers, [{ url: 'https://api.club.test' }], 'without the trailing slash the paths would double')
    t.same(doc.info.license, { name: 'Club API terms', url: 'https://club.test/api-terms' })
    t.same(doc.info.contact, { email: 'api@club.test', url: 'https://club.test/developers' })
  })
})
