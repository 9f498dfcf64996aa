// Recording boxes: the fleet list (pending first, then by area) and one box's page: its decisions
// (approve into an area, reject, revoke, rotate the token, delete, target version) and its camera
// configuration as a form that shows the server's 400 at the field it names.
import type { Area, Camera, Court, ReplayServer, ReplayServerConfig, ReplayServerStatus } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatAgo, formatTime } from '../shared/format.js'
import { ApiError } from './api.js'
import type { Context, PageView } from './main.js'
import { boxName, claimText, closestField, updateText, errorField, filterBoxes, numberValue, onlineState, pickedUp, setPath, sortBoxes } from './view.js'

const ADMIN = '/apis/v2/admin/replay-servers'
/** How often an open list or box page asks again: boxes poll every few seconds, so does the page. */
const REFRESH_MS = 3000
const STATUSES: ReplayServerStatus[] = ['PENDING', 'APPROVED', 'REJECTED', 'REVOKED']

function statusBadge(status: ReplayServerStatus): HTMLElement {
  return h('span', { class: `badge status-${status.toLowerCase()}` }, status.charAt(0) + status.slice(1).toLowerCase())
}

function onlineDot(box: ReplayServer): HTMLElement {
  const online = onlineState(box)
  return h('span', { class: `dot dot-${online.state}` }, online.label)
}

function versionText(box: ReplayServer): string {
  const running = box.version ?? 'unknown'
  return box.targetVersion && box.targetVersion !== box.version ? `${running} → ${box.targetVersion}` : running
}

/** Repeats `load` while the page is open; answers the stop function the router calls on leaving. */
function every(ms: number, load: () => Promise<void>): () => void {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const tick = async () => {
    await load().catch(() => undefined)
    if (!stopped) timer = setTimeout(tick, ms)
  }
  timer = setTimeout(tick, ms)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}

async function areaNames(ctx: Context): Promise<{ areas: Area[]; names: Map<string, string> }> {
  const areas = await ctx.session.all<Area>('/apis/v2/admin/areas')
  areas.sort((a, b) => a.name.localeCompare(b.name))
  return { areas, names: new Map(areas.map((a) => [a.id, a.name])) }
}

export const boxList: PageView = (ctx, main) => {
  const statusFilter = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s }, s.charAt(0) + s.slice(1).toLowerCase())))
  const areaFilter = h('select', { name: 'area' }, h('option', { value: '' }, 'Any area'), h('option', { value: 'none' }, 'No area'))
  const results = h('div', { 'aria-live': 'polite' }, h('p', {}, 'Loading…'))
  const problem = liveRegion('alert')
  let boxes: ReplayServer[] = []
  let names = new Map<string, string>()

  const draw = () => {
    const shown = sortBoxes(filterBoxes(boxes, { status: statusFilter.value as ReplayServerStatus | '', areaId: areaFilter.value }), names)
    const now = Date.now()
    if (shown.length === 0) {
      show(results, h('p', {}, boxes.length === 0 ? 'No box has registered yet. A new box appears here, pending, as soon as it reaches the server.' : 'No box matches these filters.'))
      return
    }
    show(
      results,
      h(
        'table',
        { class: 'list boxes' },
        h('caption', { class: 'sr-only' }, `${shown.length} of ${boxes.length} boxes, pending first, then by area`),
        h('thead', {}, h('tr', {}, ['Box', 'Status', 'Online', 'Version', 'Last seen', 'Local IP', 'Area'].map((c) => h('th', { scope: 'col' }, c)))),
        h(
          'tbody',
          {},
          shown.map((box) =>
            h(
              'tr',
              { 'data-box': box.id },
              h('td', { 'data-label': 'Box' }, h('a', { href: `#/boxes/${encodeURIComponent(box.id)}` }, boxName(box)), h('small', { class: 'sub' }, box.deviceId)),
              h(
                'td',
                { 'data-label': 'Status' },
                statusBadge(box.status),
                box.claims.length > 0
                  ? h('small', { class: 'sub claims', 'data-claims': String(box.claims.length) }, `${box.claims.length} pending claim${box.claims.length > 1 ? 's' : ''}`)
                  : null
              ),
              h('td', { 'data-label': 'Online' }, onlineDot(box)),
              h('td', { 'data-label': 'Version' }, versionText(box)),
              h('td', { 'data-label': 'Last seen', title: formatTime(box.lastSeenAt) }, formatAgo(box.lastSeenAt, now)),
              h('td', { 'data-label': 'Local IP' }, box.localIp ?? '—'),
              h('td', { 'data-label': 'Area' }, box.area ? names.get(box.area.id) ?? box.area.id : '—')
            )
          )
        )
      )
    )
  }
  const load = async () => {
    try {
      boxes = await ctx.session.all<ReplayServer>(ADMIN)
      problem.textContent = ''
      draw()
    } catch (err) {
      problem.textContent = `The boxes could not be loaded: ${(err as Error).message}`
    }
  }
  statusFilter.addEventListener('change', draw)
  areaFilter.addEventListener('change', draw)
  show(
    main,
    heading('Recording boxes'),
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, field('Status', statusFilter), field('Area', areaFilter)),
    problem,
    results
  )
  void areaNames(ctx)
    .then(({ areas, names: byId }) => {
      names = byId
      areaFilter.append(...areas.map((a) => h('option', { value: a.id }, a.name)))
      draw()
    })
    .catch(() => undefined)
  void load()
  return every(REFRESH_MS, load)
}

// ---------------------------------------------------------------------------------------------
// One box

type Draft = Record<string, unknown> & { cameras: Array<Record<string, unknown>> }

interface CameraField {
  key: keyof Camera & string
  label: string
  kind: 'text' | 'number' | 'checkbox' | 'select'
  hint?: string
  options?: string[]
}

const CAMERA_FIELDS: CameraField[] = [
  { key: 'id', label: 'Camera id', kind: 'text', hint: 'Letters, digits, dot, dash and underscore; unique in this box' },
  { key: 'name', label: 'Name', kind: 'text' },
  { key: 'isEnabled', label: 'Recording enabled', kind: 'checkbox' },
  { key: 'feed', label: 'Feed', kind: 'text', hint: 'rtsp://, rtsps://, http(s)://, srt:// or file://' },
  { key: 'feed2', label: 'Second feed', kind: 'text', hint: 'Read after three failures in a row of the first' },
  { key: 'videoCodec', label: 'Video codec', kind: 'select', options: ['h264', 'hevc', 'copy'] },
  { key: 'audioCodec', label: 'Audio codec', kind: 'select', options: ['aac', 'opus', 'none'] },
  { key: 'distortion1', label: 'Lens correction k1', kind: 'number', hint: 'From -1 to 1' },
  { key: 'distortion2', label: 'Lens correction k2', kind: 'number', hint: 'From -1 to 1' },
  { key: 'rotation', label: 'Rotation (degrees, clockwise)', kind: 'number', hint: 'From -360 to 360' },
  { key: 'scale', label: 'Scale', kind: 'number', hint: 'Output size factor, from 0.1 to 4' },
  { key: 'vignette', label: 'Vignette (radians)', kind: 'number', hint: 'From 0 to 1.57' },
  { key: 'lutPath', label: 'LUT file on the box', kind: 'text', hint: 'A .cube file, e.g. /etc/club-agent/court1.cube' }
]

const BOX_FIELDS: Array<{ key: keyof ReplayServerConfig & string; label: string; kind: 'text' | 'checkbox' | 'select'; hint?: string; options?: string[] }> = [
  { key: 'logoPath', label: 'Logo file on the box', kind: 'text', hint: 'A PNG laid over every replay' },
  { key: 'logoPlacement', label: 'Logo placement', kind: 'select', options: ['top-left', 'top-right', 'bottom-left', 'bottom-right', 'center'] },
  { key: 'postrollPath', label: 'Postroll video file on the box', kind: 'text', hint: 'Played after every replay' },
  { key: 'cloudStorageBucket', label: 'Bucket', kind: 'text', hint: 'Where replays are uploaded: gs://, s3:// or file://' },
  { key: 'cloudCredentialsPath', label: 'Bucket credentials file on the box', kind: 'text' },
  { key: 'apiBaseUrl', label: 'API address for the box', kind: 'text', hint: 'Only when the box must reach the API at another address' },
  { key: 'cleanupEnabled', label: 'Delete old footage (cleanup)', kind: 'checkbox' }
]

/** One control, named by its dotted path so that a 400 can find it. */
function control(path: string, spec: { kind: string; options?: string[] }, value: unknown): HTMLInputElement | HTMLSelectElement {
  const id = `cfg-${path.replace(/\./g, '-')}`
  if (spec.kind === 'checkbox') return h('input', { type: 'checkbox', id, 'data-path': path, checked: value === true })
  if (spec.kind === 'select') {
    return h(
      'select',
      { id, 'data-path': path },
      h('option', { value: '' }, '(default)'),
      (spec.options ?? []).map((o) => h('option', { value: o, selected: value === o }, o))
    )
  }
  return h('input', {
    type: 'text',
    id,
    'data-path': path,
    'data-kind': spec.kind,
    inputmode: spec.kind === 'number' ? 'decimal' : undefined,
    value: value === undefined || value === null ? '' : String(value),
    autocomplete: 'off',
    spellcheck: 'false'
  })
}

function wrap(path: string, label: string, input: HTMLElement, hint?: string): HTMLElement {
  const wrapper = field(label, input, hint)
  wrapper.dataset.field = path
  if (input instanceof HTMLInputElement && input.type === 'checkbox') wrapper.classList.add('check')
  return wrapper
}

/** Reads the form back into a configuration: empty fields left out, numbers as numbers. */
function readForm(form: HTMLFormElement): Draft {
  const draft: Draft = { cameras: [] }
  for (const element of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>('[data-path]')) {
    const path = element.dataset.path!
    let value: unknown
    if (element instanceof HTMLInputElement && element.type === 'checkbox') {
      value = element.checked
      if (element.dataset.court) {
        if (!element.checked) continue
        const [camera] = path.split('.courtIds')
        const list = ((draft.cameras[Number(camera!.split('.')[1])] ??= {}).courtIds ??= []) as string[]
        list.push(element.dataset.court)
        continue
      }
    } else if (element.dataset.kind === 'number') value = numberValue(element.value)
    else value = element.value.trim() === '' ? undefined : element.value.trim()
    if (value !== undefined) setPath(draft, path, value)
  }
  draft.cameras = draft.cameras.filter(Boolean)
  return draft
}

interface FormParts {
  form: HTMLFormElement
  summary: HTMLElement
}

function configForm(ctx: Context, box: ReplayServer, courts: Court[], onSaved: (box: ReplayServer) => void): FormParts {
  const summary = liveRegion('alert')
  const form = h('form', { class: 'config', novalidate: true, 'aria-label': 'Camera configuration' })
  const areaCourts = box.area ? courts.filter((c) => c.area.id === box.area!.id) : []

  const cameraSet = (camera: Record<string, unknown>, i: number) => {
    const base = `cameras.${i}`
    const chosen = new Set((camera.courtIds as string[] | undefined) ?? [])
    const known = new Set(areaCourts.map((c) => c.id))
    const courtChoices = [...areaCourts.map((c) => ({ id: c.id, name: c.name })), ...[...chosen].filter((id) => !known.has(id)).map((id) => ({ id, name: `${id} (not a court of this area)` }))]
    return h(
      'fieldset',
      { class: 'camera', 'data-field': base },
      h('legend', {}, `Camera ${i + 1}${camera.name ? `: ${camera.name}` : camera.id ? `: ${camera.id}` : ''}`),
      h(
        'div',
        { class: 'grid' },
        CAMERA_FIELDS.map((spec) => wrap(`${base}.${spec.key}`, spec.label, control(`${base}.${spec.key}`, spec, camera[spec.key] ?? (spec.key === 'isEnabled' ? true : undefined)), spec.hint))
      ),
      h(
        'fieldset',
        { class: 'courts', 'data-field': `${base}.courtIds` },
        h('legend', {}, 'Courts this camera films'),
        courtChoices.length === 0
          ? h('p', { class: 'hint' }, box.area ? 'The area has no courts yet.' : 'Approve the box for an area to choose its courts.')
          : courtChoices.map((court) =>
              h(
                'label',
                { class: 'check' },
                h('input', { type: 'checkbox', 'data-path': `${base}.courtIds`, 'data-court': court.id, checked: chosen.has(court.id) }),
                ' ',
                court.name
              )
            )
      ),
      h('button', { type: 'button', class: 'quiet', onclick: () => redraw((d) => d.cameras.splice(i, 1)) }, `Remove camera ${i + 1}`)
    )
  }

  const draw = (draft: Draft) => {
    show(
      form,
      h('h3', {}, 'Cameras'),
      draft.cameras.length === 0 ? h('p', { class: 'hint' }, 'No camera yet: the box records nothing until one is added.') : null,
      draft.cameras.map(cameraSet),
      h('button', { type: 'button', onclick: () => redraw((d) => d.cameras.push({ id: `cam-${d.cameras.length + 1}`, isEnabled: true })) }, 'Add a camera'),
      h('h3', {}, 'Logo, postroll and bucket'),
      h('div', { class: 'grid' }, BOX_FIELDS.map((spec) => wrap(spec.key, spec.label, control(spec.key, spec, draft[spec.key]), spec.hint))),
      summary,
      h('button', { type: 'submit', class: 'primary' }, 'Save the configuration')
    )
  }
  const redraw = (change: (draft: Draft) => void) => {
    const draft = readForm(form)
    change(draft)
    draw(draft)
  }

  const clearErrors = () => {
    summary.textContent = ''
    for (const el of form.querySelectorAll('.field-error')) el.remove()
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
  }
  /** The server's message beside the field it names (or its closest parent), and in the summary. */
  const showError = (message: string) => {
    const named = errorField(message)
    const path = named ? closestField(named, (p) => form.querySelector(`[data-field="${CSS.escape(p)}"]`) !== null) : null
    const target = path ? form.querySelector<HTMLElement>(`[data-field="${CSS.escape(path)}"]`) : null
    summary.textContent = `Not saved: ${message}`
    if (!target) return
    const id = `err-${path!.replace(/\./g, '-')}`
    target.append(h('p', { class: 'field-error', id }, message))
    const input = target.querySelector<HTMLElement>(':scope > input, :scope > select, input, select')
    if (input) {
      input.setAttribute('aria-invalid', 'true')
      input.setAttribute('aria-describedby', `${input.getAttribute('aria-describedby') ?? ''} ${id}`.trim())
      input.focus()
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    clearErrors()
    try {
      const saved = await ctx.session.call<ReplayServer>('PUT', `${ADMIN}/${box.id}/config`, readForm(form))
      summary.textContent = ''
      onSaved(saved)
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) showError(err.message)
      else summary.textContent = `Not saved: ${(err as Error).message}`
    }
  })
  draw({ ...(box.config ?? { cleanupEnabled: false }), cameras: (box.config?.cameras ?? []) as unknown as Array<Record<string, unknown>> } as Draft)
  return { form, summary }
}

/** The box's update, when its polls report one. */
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
