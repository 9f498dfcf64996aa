// Releases of the recording box's software: Debian packages an admin uploads with their signature,
// made offline with one of the club's release keys (Ed25519), fetched by the boxes told to run them
// (see PendingUpdate). The server holds only the public keys it trusts.
import Type, { type Static } from 'typebox'
import { Collection, DateTime, ErrorBody, bearerSecurity, defineRoutes, noSecurity } from './common.js'
import { Architecture, ReleaseDownload, Semver } from './replay-servers.js'

/** A stored release as an admin sees it: what a box is told of it, and when it was uploaded. */
export const AgentRelease = Type.Object({ ...ReleaseDownload.properties, createdDate: DateTime() })
export type AgentRelease = Static<typeof AgentRelease>

export const AgentReleaseList = Collection(AgentRelease)
export type AgentReleaseList = Static<typeof AgentReleaseList>

/** The package itself, sent as it is (application/vnd.debian.binary-package); never serialised. */
export const DebianPackage = Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'application/vnd.debian.binary-package' })

export const AgentReleaseParams = Type.Object({ version: Semver, architecture: Architecture })
export type AgentReleaseParams = Static<typeof AgentReleaseParams>

export const AgentReleaseKey = Type.Object({
  publicKey: Type.String({ description: 'The Ed25519 public key, SPKI PEM: what a box checks packages against' }),
  fingerprint: Type.String({
    pattern: '^[0-9a-f]{64}$',
    description:
      "SHA-256 of the key's DER (SPKI), hex, as `openssl pkey -pubin -outform DER | sha256sum` prints it. `club-agent setup` " +
      'prints it; the installer compares it with the one `club agent-releases keygen` gave the admin (this answer itself ' +
      'travels with the key, so over plain http it proves nothing)'
  })
})
export type AgentReleaseKey = Static<typeof AgentReleaseKey>

/** Every release key the server trusts; the first also as the answer's own fields, for boxes set up before rotation. */
export const AgentReleaseKeys = Type.Object({
  ...AgentReleaseKey.properties,
  keys: Type.Array(AgentReleaseKey, { minItems: 1, description: 'Every trusted key: a box pins them all at setup, so a release signed by any installs' })
})
export type AgentReleaseKeys = Static<typeof AgentReleaseKeys>

/** The header that carries a package's detached signature (base64) on upload. */
export const RELEASE_SIGNATURE_HEADER = 'x-release-signature'

export const AgentReleaseUploadHeaders = Type.Object({
  [RELEASE_SIGNATURE_HEADER]: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'The signature `club agent-releases sign` wrote (FILE.sig, base64), by a key in AGENT_RELEASE_PUBLIC_KEYS'
    })
  )
})

export const agentReleaseRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/admin/agent-releases',
    schema: {
      operationId: 'createAgentRelease',
      summary: 'Upload an agent package',
      description:
        'Admin Bearer only. The body is the .deb itself (Content-Type application/vnd.debian.binary-package or ' +
        'application/octet-stream), its signature in X-Release-Signature (made offline by `club agent-releases sign`). Its ' +
        'version and architecture are read from its control file; the signature must be a trusted key\'s over its name, version, ' +
        'architecture and SHA-256, or 400. A version already stored for that architecture is 409; not a package, or a version with build metadata (+…), 400.',
      tags: ['agent-releases'],
      security: bearerSecurity,
      headers: AgentReleaseUploadHeaders,
      response: { 201: AgentRelease, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/admin/agent-releases',
    schema: {
      operationId: 'listAgentReleases',
      summary: 'Every stored agent package, newest first',
      description: 'Admin Bearer only.',
      tags: ['agent-releases'],
      security: bearerSecurity,
      response: { 200: AgentReleaseList, 401: ErrorBody, 403: ErrorBody }
    }
  },
  key: {
    method: 'GET',
    url: '/apis/v2/agent-releases/key',
    schema: {
      operationId: 'getAgentReleaseKey',
      summary: 'The release keys the server trusts (public halves)',
      description: 'No authorization: `club-agent setup` writes them on the box. 404 while AGENT_RELEASE_PUBLIC_KEYS is empty.',
      tags: ['agent-releases'],
      security: noSecurity,
      response: { 200: AgentReleaseKeys, 404: ErrorBody }
    }
  },
  download: {
    method: 'GET',
    url: '/apis/v2/replay-servers/device/agent-releases/:version/:architecture',
    schema: {
      operationId: 'getAgentReleasePackage',
      summary: 'Download an agent package',
      description:
        "The box's access token as Bearer. Answers Range requests (206), so an interrupted download resumes. " +
        'The box checks size, SHA-256 and signature before installing.',
      tags: ['agent-releases'],
      security: bearerSecurity,
      params: AgentReleaseParams,
      response: { 200: DebianPackage, 206: DebianPackage, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 416: ErrorBody }
    }
  }
})
