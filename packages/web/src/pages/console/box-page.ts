// One recording box's page: its facts, its decisions (approve into an area, reject, revoke, rotate the
// token, delete, target version), its camera configuration (box-config.ts) and its courts' signs.
import type { Area, Court, ReplayServer } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatAgo, formatTime } from '../shared/format.js'
import { ApiError } from './api.js'
import type { Context, PageView } from './page.js'
import { boxName, claimText, updateText, pickedUp } from './view.js'

import { ADMIN, REFRESH_MS, areaNames, cameraDots, every, onlineDot, problemsText, statusBadge } from './boxes.js'
import { configForm } from './box-config.js'

function updateStateLine(box: ReplayServer): HTMLElement | null {
  const text = updateText(box)
  return text ? h('div', {}, h('dt', {}, 'Update'), h('dd', { 'data-fact': 'updateState' }, text)) : null
}

function facts(box: ReplayServer, names: Map<string, string>): HTMLElement {
  const now = Date.now()
  const fact = (label: string, value: string | Node, key: string) => h('div', {}, h('dt', {}, label), h('dd', { 'data-fact': key }, value))
  return h(
    'dl',
    { class: 'facts' },
    fact('Status', statusBadge(box.status), 'status'),
    fact('Online', onlineDot(box), 'online'),
    fact('Cameras', cameraDots(box), 'cameras'),
    fact('Problems', problemsText(box) ?? (box.health ? 'none' : 'no report yet'), 'problems'),
    fact('Last seen', box.lastSeenAt ? `${formatAgo(box.lastSeenAt, now)} (${formatTime(box.lastSeenAt)})` : 'never', 'lastSeen'),
    fact('Device id', box.deviceId, 'deviceId'),
    fact(
      'Box key',
      box.keyFingerprint === null
        ? 'none (registered without a key)'
        : box.keyAdoptedDate
          ? `${box.keyFingerprint} (adopted from a poll from ${box.keyAdoptedFrom ?? '?'} at ${formatTime(box.keyAdoptedDate)})`
          : box.keyFingerprint,
      'keyFingerprint'
    ),
    fact('Hostname', box.hostname ?? '—', 'hostname'),
    fact('Area', box.area ? names.get(box.area.id) ?? box.area.id : 'none yet', 'area'),
    fact('Version', box.version ?? 'unknown', 'version'),
    fact('Target version', box.targetVersion ?? 'none', 'targetVersion'),
    updateStateLine(box),
    fact('Local IP', box.localIp ?? '—', 'localIp'),
    fact('Local API', box.serverUrl ?? '—', 'serverUrl'),
    fact('Registered', formatTime(box.createdDate), 'created')
  )
}

/** What the box has of the admin's decisions, in words. */
function pickupText(box: ReplayServer): string {
  if (box.status === 'PENDING') return 'Waiting for an admin: approve the box into an area to start recording.'
  if (box.status === 'REJECTED') return 'Rejected: the box records nothing and polls slowly. Approving it lets it record.'
  if (box.status === 'REVOKED') return 'Revoked: its token no longer works and it records nothing.'
  return pickedUp(box)
    ? 'Approved. The box has its approval and configuration (it has polled since the last change).'
    : 'Approved. The box receives the change on its next poll.'
}

export const boxPage: PageView = (ctx, main, id) => {
  const title = heading('Recording box')
  const pickup = h('p', { role: 'status', class: 'pickup' })
  const factsSlot = h('div')
  const actions = h('section', { 'aria-labelledby': 'actions-h' })
  const claims = h('section', { 'aria-labelledby': 'claims-h' })
  const config = h('section', { 'aria-labelledby': 'config-h' })
  const notice = liveRegion('status')
  const problem = liveRegion('alert')
  let names = new Map<string, string>()
  let areas: Area[] = []
  let courts: Court[] = []
  let box: ReplayServer | undefined
  show(main, h('p', {}, h('a', { href: '#/boxes' }, '← All boxes')), title, pickup, notice, problem, factsSlot, claims, actions, config)

  const drawFacts = () => {
    if (!box) return
    title.textContent = boxName(box)
    pickup.textContent = pickupText(box)
    show(factsSlot, facts(box, names))
    drawClaims()
  }

  /** Registrations of this deviceId that did not prove the box key: the box goes on meanwhile. */
  const drawClaims = () => {
    const current = box!
    if (current.claims.length === 0) return show(claims)
    show(
      claims,
      h('h2', { id: 'claims-h' }, 'Pending claims'),
      h(
        'p',
        { class: 'hint' },
        'The box goes on as it is, and a box that kept its key comes back by itself: it never needs a claim. Accept a claim only when ' +
          'the box was reinstalled with a new key and the installer reads you the fingerprint the claim proved (club-agent setup or ' +
          "the box page); the old serverId then stops. A claim without a proven key cannot be told from a stranger's, and one with the " +
          "box's own key is not the box (the box proves its key by itself): reject them."
      ),
      h(
        'ul',
        { class: 'claims' },
        current.claims.map((claim) =>
          h(
            'li',
            { 'data-claim': claim.id },
            h('p', {}, claimText(claim, formatTime)),
            h(
              'div',
              { class: 'buttons' },
              h('button', { type: 'button', onclick: () => act('Claim accepted: it is the box now.', 'POST', `/claims/${claim.id}/approve`) }, 'Accept as this box'),
              ' ',
              h('button', { type: 'button', class: 'danger', onclick: () => act('Claim rejected.', 'POST', `/claims/${claim.id}/reject`) }, 'Reject')
            )
          )
        )
      )
    )
  }

  /** A decision; the configuration form is drawn again only when the area changed (its courts did). */
  const act = async (what: string, method: string, path: string, body?: unknown) => {
    notice.textContent = ''
    problem.textContent = ''
    try {
      const areaBefore = box!.area?.id
      const answer = await ctx.session.call<ReplayServer | null>(method, `${ADMIN}/${box!.id}${path}`, body)
      if (answer) box = answer
      notice.textContent = what
      drawFacts()
      drawActions()
      if (box!.area?.id !== areaBefore) drawConfig()
      // The button pressed was drawn again: keyboard users continue from the section's heading.
      actions.querySelector<HTMLElement>('h2')?.focus()
      return true
    } catch (err) {
      problem.textContent = `${(err as Error).message}`
      return false
    }
  }

  const drawActions = () => {
    const current = box!
    const area = h('select', { id: 'approve-area', required: true }, h('option', { value: '' }, 'Choose an area…'), areas.map((a) => h('option', { value: a.id, selected: current.area?.id === a.id }, a.name)))
    const displayName = h('input', { id: 'approve-name', type: 'text', value: current.displayName ?? '', autocomplete: 'off' })
    const approveLabel = current.status === 'APPROVED' ? 'Move to this area' : 'Approve'
    const approve = h(
      'form',
      {
        class: 'inline',
        'aria-label': 'Approve',
        onsubmit: async (event) => {
          event.preventDefault()
          if (!area.value) {
            problem.textContent = 'Choose the area the box records before approving it.'
            area.focus()
            return
          }
          const name = displayName.value.trim()
          await act(`Approved for ${area.selectedOptions[0]!.textContent}.`, 'POST', '/approve', { areaId: area.value, ...(name ? { displayName: name } : {}) })
        }
      },
      field('Area', area),
      field('Display name (optional)', displayName),
      h('button', { type: 'submit', class: 'primary' }, approveLabel)
    )
    const target = h('input', { id: 'target-version', type: 'text', value: current.targetVersion ?? '', placeholder: '1.4.0', autocomplete: 'off' })
    const windowInput = h('input', { id: 'update-window', type: 'text', value: current.updateWindow ?? '', placeholder: '02:00-05:00', autocomplete: 'off' })
    const targetForm = h(
      'form',
      {
        class: 'inline',
        'aria-label': 'Target version',
        onsubmit: async (event) => {
          event.preventDefault()
          const version = target.value.trim()
          const updateWindow = windowInput.value.trim()
          await act(version ? `Target version set to ${version}.` : 'Target version cleared.', 'PUT', '/target-version', {
            version: version || null,
            updateWindow: updateWindow || null
          })
        }
      },
      field('Target version', target, 'The agent version the box should run; empty clears it'),
      field('Update window (optional)', windowInput, "HH:MM-HH:MM in the club's timezone; empty: as soon as the box is idle"),
      h('button', { type: 'submit' }, 'Set target version')
    )
    const confirmSlot = h('div')
    const askDelete = () =>
      show(
        confirmSlot,
        h(
          'div',
          { class: 'confirm', role: 'alertdialog', 'aria-labelledby': 'confirm-text' },
          h('p', { id: 'confirm-text' }, `Delete ${boxName(current)}? The server forgets it; if it runs, it registers again as a new pending box.`),
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              onclick: async () => {
                try {
                  await ctx.session.call('DELETE', `${ADMIN}/${current.id}`)
                  ctx.go('#/boxes')
                } catch (err) {
                  problem.textContent = (err as Error).message
                }
              }
            },
            'Yes, delete it'
          ),
          ' ',
          h('button', { type: 'button', onclick: () => show(confirmSlot) }, 'Cancel')
        )
      )
    show(
      actions,
      h('h2', { id: 'actions-h', tabindex: '-1' }, 'Decisions'),
      approve,
      h(
        'div',
        { class: 'buttons' },
        current.status !== 'REJECTED' && current.status !== 'APPROVED'
          ? h('button', { type: 'button', onclick: () => act('Rejected.', 'POST', '/reject') }, 'Reject')
          : null,
        current.status === 'APPROVED' ? h('button', { type: 'button', onclick: () => act('Revoked: its token no longer works.', 'POST', '/revoke') }, 'Revoke') : null,
        current.status === 'APPROVED'
          ? h('button', { type: 'button', onclick: () => act('New token made: the box gets it on its next poll.', 'POST', '/rotate-token') }, 'Rotate the token')
          : null,
        h('button', { type: 'button', class: 'danger', onclick: askDelete }, 'Delete…')
      ),
      confirmSlot,
      targetForm
    )
  }

  const drawConfig = () => {
    const current = box!
    const signs = courtSigns(ctx, current.area ? courts.filter((c) => c.area.id === current.area!.id) : [])
    const { form } = configForm(ctx, current, courts, (saved) => {
      box = saved
      notice.textContent = 'Configuration saved: the box receives it on its next poll.'
      drawAll()
    })
    const raw = h('textarea', { id: 'raw-json', rows: 16, spellcheck: 'false' }, JSON.stringify(current.config ?? { cleanupEnabled: false, cameras: [] }, null, 2))
    const rawProblem = liveRegion('alert')
    show(
      config,
      h('h2', { id: 'config-h' }, 'Configuration'),
      form,
      signs,
      h(
        'details',
        { class: 'raw' },
        h('summary', {}, 'Raw JSON (for power users)'),
        field('The configuration as JSON', raw),
        rawProblem,
        h(
          'button',
          {
            type: 'button',
            onclick: async () => {
              rawProblem.textContent = ''
              let value: unknown
              try {
                value = JSON.parse(raw.value)
              } catch (err) {
                rawProblem.textContent = `Not JSON: ${(err as Error).message}`
                return
              }
              try {
                box = await ctx.session.call<ReplayServer>('PUT', `${ADMIN}/${current.id}/config`, value)
                notice.textContent = 'Configuration saved: the box receives it on its next poll.'
                drawAll()
              } catch (err) {
                rawProblem.textContent = `Not saved: ${(err as Error).message}`
              }
            }
          },
          'Save the JSON'
        )
      )
    )
  }

  const drawAll = () => {
    drawFacts()
    drawActions()
    drawConfig()
  }

  const load = async () => {
    box = await ctx.session.call<ReplayServer>('GET', `${ADMIN}/${encodeURIComponent(id!)}`)
    drawFacts()
  }
  void (async () => {
    try {
      const [fetched, areaList, courtList] = await Promise.all([
        ctx.session.call<ReplayServer>('GET', `${ADMIN}/${encodeURIComponent(id!)}`),
        areaNames(ctx),
        ctx.session.all<Court>('/apis/v2/admin/courts')
      ])
      box = fetched
      areas = areaList.areas
      names = areaList.names
      courts = courtList
      drawAll()
    } catch (err) {
      problem.textContent = err instanceof ApiError && err.status === 404 ? 'There is no such box (it may have been deleted).' : (err as Error).message
    }
  })()
  // Only the facts refresh: the form keeps what the admin is typing.
  return every(REFRESH_MS, load)
}

/**
 * The printable sign of each court of the box's area (its QR code opens the court's replay page).
 * The sign route needs the staff member's token, so the file is fetched and saved from memory.
 */
function courtSigns(ctx: Context, areaCourts: Court[]): HTMLElement | null {
  if (areaCourts.length === 0) return null
  const problem = liveRegion('alert')
  const save = async (court: Court, format: 'pdf' | 'svg') => {
    problem.textContent = ''
    try {
      const blob = await ctx.session.file(`/apis/v2/admin/courts/${encodeURIComponent(court.id)}/sign?format=${format}`, format === 'pdf' ? 'application/pdf' : 'image/svg+xml')
      const url = URL.createObjectURL(blob)
      const link = h('a', { href: url, download: `sign-${court.slug}.${format}` })
      document.body.append(link)
      link.click()
      link.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
    } catch (err) {
      problem.textContent = `No sign for ${court.name}: ${(err as Error).message}`
    }
  }
  return h(
    'section',
    { class: 'signs', 'aria-labelledby': 'signs-h' },
    h('h3', { id: 'signs-h' }, 'Court signs'),
    h('p', { class: 'hint' }, "Print one per court (A5): players scan its code to get their replay on their phone."),
    h(
      'ul',
      {},
      areaCourts.map((court) =>
        h(
          'li',
          {},
          court.name,
          ' ',
          h('button', { type: 'button', class: 'quiet', onclick: () => void save(court, 'pdf') }, `Sign for ${court.name} (PDF)`),
          ' ',
          h('button', { type: 'button', class: 'quiet', onclick: () => void save(court, 'svg') }, 'SVG')
        )
      )
    ),
    problem
  )
}

