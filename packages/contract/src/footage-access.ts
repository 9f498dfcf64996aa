// The footage access log (issue 33): every look at footage of people (a replay asked for, a download
// link issued, an admin's camera snapshot) is a row an admin can read, and the notice the court page
// and the console show of what is recorded and for how long.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes, noSecurity } from './common.js'

export const FootageActor = Type.Enum(['member', 'staff', 'admin', 'guest'], { description: "Who looked: a user's role at the time, or a court page's guest" })
export type FootageActor = Static<typeof FootageActor>

export const FootagePurpose = Type.Enum(['REPLAY', 'DOWNLOAD_LINK', 'SNAPSHOT'], {
  description: 'REPLAY: a replay asked for; DOWNLOAD_LINK: a link to a READY clip handed out (the console and the court page get theirs this way); SNAPSHOT: a camera picture an admin or staff asked the box for'
})
export type FootagePurpose = Static<typeof FootagePurpose>

export const FootageAccess = Type.Object({
  id: Type.String(),
  date: DateTime({ description: 'When the footage was looked at' }),
  actor: FootageActor,
  user: Nullable(ItemRef),
  guestSession: Nullable(Type.Object({ id: Type.String() }, { description: 'The guest session (never its token)' })),
  purpose: FootagePurpose,
  accessReason: Nullable(Type.String({ description: 'What staff typed to see footage older than REPLAY_MAX_AGE_SECONDS' })),
  court: Nullable(ItemRef),
  replayServer: Nullable(ItemRef),
  camera: Type.Object({ id: Type.String() }),
  replay: Nullable(ItemRef),
  start: DateTime({ description: 'The footage looked at: from' }),
  end: DateTime({ description: 'To (a snapshot: both are its moment)' }),
  address: Nullable(Type.String({ description: 'The client address the request came from (as TRUST_PROXY decides)' })),
  _links: Links
})
export type FootageAccess = Static<typeof FootageAccess>

export const FootageAccessCollection = PagedCollection(FootageAccess)
export type FootageAccessCollection = Static<typeof FootageAccessCollection>

const Id = (description: string) => Type.String({ minLength: 1, maxLength: 100, description })

export const FootageAccessQuery = Type.Object(
  {
    court: Type.Optional(Id('A court id')),
    user: Type.Optional(Id('A user id: the looks of this user')),
    from: Type.Optional(DateTime({ description: 'Looks at footage ending at or after this' })),
    to: Type.Optional(DateTime({ description: 'Looks at footage starting at or before this' })),
    ...PageQuery
  },
  { additionalProperties: false }
)
export type FootageAccessQuery = Static<typeof FootageAccessQuery>

/** What the club records of its courts and for how long, as the court page and the console say it. */
export const FootageNotice = Type.Object({
  replayMaxAgeSeconds: Type.Integer({ description: "REPLAY_MAX_AGE_SECONDS: how far back a member's or guest's replay may end" }),
  replayRetentionDays: Type.Integer({ description: 'REPLAY_RETENTION_DAYS: how long a replay clip is kept' }),
  footageLogRetentionDays: Type.Integer({ description: 'FOOTAGE_LOG_RETENTION_DAYS: how long each look at footage is recorded' }),
  contact: Type.String({ description: "FOOTAGE_CONTACT: whom to ask about footage; empty: the club's desk" })
})
export type FootageNotice = Static<typeof FootageNotice>

export const footageAccessRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/admin/footage-access',
    schema: {
      operationId: 'listFootageAccess',
      summary: 'The footage access log: every look at footage, newest first',
      description:
        'Admin Bearer only. Each replay asked for, download link issued and camera snapshot taken, with who, the court, camera and ' +
        'minutes, what for and from which address. `from` and `to` select by the footage looked at (its interval overlaps ' +
        '[from, to]), so "who saw this court on Tuesday evening" is one query. Kept FOOTAGE_LOG_RETENTION_DAYS. Not in the reference.',
      tags: ['footage-access (admin)'],
      security: bearerSecurity,
      querystring: FootageAccessQuery,
      response: { 200: FootageAccessCollection, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  notice: {
    method: 'GET',
    url: '/apis/v2/replays/footage-notice',
    schema: {
      operationId: 'getFootageNotice',
      summary: 'What is recorded of the courts and for how long, and whom to ask',
      description:
        'No authorization: the notice is for anyone filmed. The court page writes the same figures into its own words. 429: a request ' +
        'with an API key past API_KEY_RATE_LIMIT_MAX, like any other.',
      tags: ['replays'],
      security: noSecurity,
      response: { 200: FootageNotice, 429: ErrorBody }
    }
  }
})
