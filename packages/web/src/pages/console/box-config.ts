// One box's camera configuration as a form that shows the server's 400 at the field it names.
import type { Camera, Court, ReplayServer, ReplayServerConfig } from '@club/contract'
import { field, h, liveRegion, show } from '../shared/dom.js'
import { ApiError } from './api.js'
import { ADMIN } from './boxes.js'
import type { Context } from './page.js'
import { closestField, errorField, numberValue, setPath } from './view.js'

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

export function configForm(ctx: Context, box: ReplayServer, courts: Court[], onSaved: (box: ReplayServer) => void): FormParts {
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
