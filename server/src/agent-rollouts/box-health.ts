// The one thing rollouts ask of box health (the fleet-health area): since when every enabled camera
// of a box has been RECORDING per its latest health report. Box health is not on this branch: the
// app passes its own function as AppOptions.recordingSince, and until one is wired a rollout counts
// a box as updated on its version alone (see RolloutDeps.recordingSince).
export type { RecordingSince } from './service.js'
