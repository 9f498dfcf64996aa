// Matches (issue 49): a booking's or an event's whole interval on a filmed court, recorded by every
// camera filming it. With MATCH_RECORDING on, the server asks the boxes for it when the interval ends
// (plus MATCH_GRACE_SECONDS): one replay of kind MATCH per camera (an angle), grouped here, with the
// replays the participants asked for meanwhile as chapters.
import Type, { type Static } from 'typebox'
import { AuthErrors, DateTime, ErrorBody, IdParams, ItemRef, Links, PageQuery, PagedCollection, defineRoutes, scopedSecurity } from './common.js'
import { Chapter, Replay, ReplayStatus } from './replays.js'

export const MatchSource = Type.Union([
  Type.Object({ type: Type.Literal('BOOKING'), redemption: ItemRef }, { additionalProperties: false, description: 'A BOOKING package redemption of the court' }),
  Type.Object({ type: Type.Literal('EVENT'), event: ItemRef }, { additionalProperties: false, description: 'An event with recordMatch: true on the court' })
])
export type MatchSource = Static<typeof MatchSource>

export const Match = Type.Object({
  id: Type.String(),
  /**
   * The angles' progress as one: REQUESTED/EXPORTING/UPLOADING while any angle is still being made
   * (the least advanced), READY once none is and at least one is READY, else the angles' own final
   * status (FAILED, EXPIRED, TAKEN_DOWN).
   */
  status: ReplayStatus,
  source: MatchSource,
  court: ItemRef,
  start: DateTime(),
  end: DateTime(),
  /** One replay of kind MATCH per camera filming the court when the match ended; each READY one with its download link. */
  angles: Type.Array(Replay),
  chapters: Type.Array(Chapter, { description: 'In order of `at`' }),
  expiresAt: DateTime({ description: "MATCH_RETENTION_DAYS after its end: the clips are deleted and the angles EXPIRED" }),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type Match = Static<typeof Match>

export const MatchCollection = PagedCollection(Match)
export type MatchCollection = Static<typeof MatchCollection>

export const MatchListQuery = Type.Object(
  {
    court: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A court id' })),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A participant (staff only; a member sees the matches they take part in)' })),
    ...PageQuery
  },
  { additionalProperties: false }
)
export type MatchListQuery = Static<typeof MatchListQuery>

const errors = { 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
const memberSecurity = scopedSecurity('replays')

export const matchRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/matches',
    schema: {
      operationId: 'listMatches',
      summary: 'Matches, newest first: those you take part in, or (staff) anyone\'s',
      description:
        'A participant is the booking\'s redeemer and the users of its GUEST_SIGNUP items, or an event\'s EVENT_SIGNUP and ' +
        'SERIES_SIGNUP redemptions. The list gives no download links (and spends nothing): open a match for them.',
      tags: ['replays'],
      security: memberSecurity,
      querystring: MatchListQuery,
      response: { 200: MatchCollection, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/matches/:id',
    schema: {
      operationId: 'getMatch',
      summary: 'One match with its angles and chapters; READY angles with download links',
      description:
        'Participants and staff; anyone else 404. Each link handed out is written to the footage access log. With ' +
        'MATCH_REQUIRES_PACKAGE on, a participant\'s first opening of a READY match redeems one REPLAY item (target ' +
        '`match`), spent from then on; 402 when none is left (nothing handed out). Staff never pay.',
      tags: ['replays'],
      security: memberSecurity,
      params: IdParams,
      response: { 200: Match, ...errors, 402: ErrorBody }
    }
  }
})
