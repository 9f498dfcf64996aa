// Staged rollouts of the box software (admins): each rollout, newest first, with every group's
// progress (offered, succeeded, failed, pending, excluded) and why it halted; pause, resume and
// cancel. Asks again every few seconds while open: a rollout moves as the boxes poll.
import type { AgentRollout, AgentRolloutGroup, AgentRolloutList } from '@club/contract'
import { h, heading, liveRegion, show } from '../shared/dom.js'
import { formatTime } from '../shared/format.js'
import { REFRESH_MS, every } from './boxes.js'
import type { PageView } from './page.js'
import { listTable, pager } from './paging.js'

const ROLLOUTS = '/apis/v2/admin/agent-rollouts'
const IPP = 10

/** A group's name: its place and what it is (named canaries or a share of the boxes). */
export function groupName(group: Pick<AgentRolloutGroup, 'position' | 'percent'>): string {
  return `Group ${group.position} (${group.percent === null ? 'canaries' : `${group.percent} %`})`
}

/** "2 of 3 updated": the boxes that succeeded out of those not excluded. */
export function groupProgress(group: Pick<AgentRolloutGroup, 'boxes' | 'succeeded' | 'excluded'>): string {
  return `${group.succeeded} of ${group.boxes.length - group.excluded} updated`
}

export const rolloutList: PageView = (ctx, main) => {
  const results = h('div', { 'aria-live': 'polite' }, h('p', {}, 'Loading…'))
  const problem = liveRegion('alert')
  const done = liveRegion('status')
  let page = 1

  const act = (rollout: AgentRollout, what: 'pause' | 'resume' | 'cancel', label: string, css = '') =>
    h(
      'button',
      {
        type: 'button',
        class: css,
        'aria-label': `${label} the rollout of ${rollout.version}`,
        onclick: async () => {
          try {
            const changed = await ctx.session.call<AgentRollout>('POST', `${ROLLOUTS}/${encodeURIComponent(rollout.id)}/${what}`)
            done.textContent = `The rollout of ${changed.version} is ${changed.status}.`
            void load()
          } catch (err) {
            problem.textContent = `Not done: ${(err as Error).message}`
          }
        }
      },
      label
    )

  const card = (rollout: AgentRollout) =>
    h(
      'section',
      { class: 'card rollout', 'data-rollout': rollout.id, 'aria-label': `Rollout of ${rollout.version}` },
      h('h2', {}, `club-agent ${rollout.version} `, h('span', { class: `badge rollout-${rollout.status.toLowerCase()}` }, rollout.status)),
      h(
        'p',
        { class: 'sub' },
        `Started ${formatTime(rollout.createdDate)}; ${rollout.succeeded} updated, ${rollout.failed} failed, ${rollout.pending} pending, ${rollout.excluded} excluded. ` +
          `Halts at ${rollout.errorThresholdPercent} % failures in a group; a group completes at ${rollout.successThresholdPercent} %; ` +
          (rollout.healthSeconds > 0 ? `a box counts once its cameras recorded ${rollout.healthSeconds} s on the version.` : 'a box counts on its version alone.')
      ),
      rollout.haltedReason ? h('p', { class: 'error' }, `Halted: ${rollout.haltedReason}`) : null,
      listTable(
        ['Group', 'Status', 'Progress', 'Offered', 'Succeeded', 'Failed', 'Pending', 'Excluded'],
        rollout.groups.map((g) => [
          groupName(g),
          g.status,
          h('span', {}, h('progress', { value: g.succeeded, max: Math.max(1, g.boxes.length - g.excluded) }), ' ', groupProgress(g)),
          g.offered,
          g.succeeded,
          g.failed,
          g.pending,
          g.excluded
        ])
      ),
      rollout.status === 'RUNNING' || rollout.status === 'PAUSED'
        ? h(
            'p',
            { class: 'actions' },
            rollout.status === 'RUNNING' ? act(rollout, 'pause', 'Pause') : act(rollout, 'resume', 'Resume', 'primary'),
            ' ',
            act(rollout, 'cancel', 'Cancel', 'danger')
          )
        : null
    )

  const load = async () => {
    try {
      const answer = await ctx.session.call<AgentRolloutList>('GET', `${ROLLOUTS}?page=${page}&ipp=${IPP}`)
      problem.textContent = ''
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No rollout yet. Start one with club rollouts create VERSION --groups 5,15,80 --error-threshold 10, or POST /apis/v2/admin/agent-rollouts.')
          : answer.items.map(card),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The rollouts could not be loaded: ${(err as Error).message}`
    }
  }
  show(main, heading('Rollouts'), problem, done, results)
  void load()
  return every(REFRESH_MS, load)
}
