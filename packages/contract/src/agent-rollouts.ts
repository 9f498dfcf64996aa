// Staged rollouts of an agent release: the boxes in scope split into groups offered the release one
// group after another, each opening when the one before reached its success threshold, the whole
// halting itself when a group's failures reach the error threshold. A box counts as updated only
// once it runs the version and its cameras have recorded for healthSeconds.
import Type, { type Static } from 'typebox'

/** RUNNING; PAUSED by staff; HALTED by the error threshold; COMPLETED; CANCELLED by staff. */
export const AgentRolloutStatus = Type.Enum(['RUNNING', 'PAUSED', 'HALTED', 'COMPLETED', 'CANCELLED'])
export type AgentRolloutStatus = Static<typeof AgentRolloutStatus>
