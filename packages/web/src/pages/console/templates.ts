// Templates: the list with the API's filters and paging, one template with its versions, and a
// rollback to any earlier version (If-Match with the version read, so a concurrent change is refused).
import type { Area, Template, TemplateCollection, TemplateVersionCollection } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatTime } from '../shared/format.js'
import type { PageView } from './page.js'
import { pager } from './paging.js'

const API = '/apis/v2/templates'
const IPP = 20

export const templateList: PageView = (ctx, main) => {
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'Any type'), ['EVENT', 'SERIES', 'PACKAGE'].map((t) => h('option', { value: t }, t)))
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), ['DRAFT', 'PUBLISHED', 'ARCHIVED'].map((s) => h('option', { value: s }, s)))
  const search = h('input', { type: 'search', name: 'search', autocomplete: 'off' })
  const subtype = h('input', { type: 'text', name: 'subtype', autocomplete: 'off' })
  const area = h('select', { name: 'areaId' }, h('option', { value: '' }, 'Any area'))
  const results = h('div', { 'aria-live': 'polite' })
  const problem = liveRegion('alert')
  let page = 1

  const load = async () => {
    const query = new URLSearchParams({ page: String(page), ipp: String(IPP) })
    for (const [key, input] of [['type', type], ['status', status], ['search', search], ['subtype', subtype], ['areaId', area]] as const) {
      if (input.value.trim()) query.set(key, input.value.trim())
    }
    try {
      const answer = await ctx.session.call<TemplateCollection>('GET', `${API}?${query}`)
      problem.textContent = ''
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No template matches.')
          : h(
              'table',
              { class: 'list' },
              h('thead', {}, h('tr', {}, ['Name', 'Type', 'Status', 'Version', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
              h(
                'tbody',
                {},
                answer.items.map((t) =>
                  h(
                    'tr',
                    {},
                    h('td', { 'data-label': 'Name' }, h('a', { href: `#/templates/${encodeURIComponent(t.id)}` }, t.name)),
                    h('td', { 'data-label': 'Type' }, t.type),
                    h('td', { 'data-label': 'Status' }, t.status),
                    h('td', { 'data-label': 'Version' }, String(t.version)),
                    h('td', { 'data-label': 'Updated' }, formatTime(t.updatedDate))
                  )
                )
              )
            ),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The templates could not be loaded: ${(err as Error).message}`
    }
  }
  const filters = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      onsubmit: (event) => {
        event.preventDefault()
        page = 1
        void load()
      }
    },
    field('Type', type),
    field('Status', status),
    field('Name or description contains', search),
    field('Subtype', subtype),
    field('Area', area),
    h('button', { type: 'submit' }, 'Filter')
  )
  for (const select of [type, status, area]) select.addEventListener('change', () => filters.requestSubmit())
  show(main, heading('Templates'), filters, problem, results)
  // Areas are an admin's list; staff filter without it.
  if (ctx.user.role === 'admin') {
    void ctx.session
      .all<Area>('/apis/v2/admin/areas')
      .then((areas) => area.append(...areas.sort((a, b) => a.name.localeCompare(b.name)).map((a) => h('option', { value: a.id }, a.name))))
      .catch(() => area.closest('.field')?.remove())
  } else area.closest('.field')?.remove()
  void load()
}

export const templatePage: PageView = (ctx, main, id) => {
  const title = heading('Template')
  const details = h('div')
  const versions = h('section', { 'aria-labelledby': 'versions-h' })
  const notice = liveRegion('status')
  const problem = liveRegion('alert')
  show(main, h('p', {}, h('a', { href: '#/templates' }, '← All templates')), title, notice, problem, details, versions)

  const load = async () => {
    try {
      const [template, history] = await Promise.all([
        ctx.session.call<Template>('GET', `${API}/${encodeURIComponent(id!)}`),
        ctx.session.call<TemplateVersionCollection>('GET', `${API}/${encodeURIComponent(id!)}/versions`)
      ])
      title.textContent = template.name
      show(
        details,
        h(
          'dl',
          { class: 'facts' },
          [
            ['Type', template.type],
            ['Status', template.status],
            ['Version', String(template.version)],
            ['Description', template.description ?? '—'],
            ['Updated', formatTime(template.updatedDate)]
          ].map(([label, value]) => h('div', {}, h('dt', {}, label), h('dd', {}, value)))
        ),
        h('h2', {}, 'Content'),
        h('pre', { class: 'json', tabindex: '0', 'aria-label': 'Content as JSON' }, JSON.stringify(template.data, null, 2))
      )
      show(
        versions,
        h('h2', { id: 'versions-h' }, 'Versions'),
        h(
          'table',
          { class: 'list' },
          h('thead', {}, h('tr', {}, ['Version', 'Change', 'Name', 'Status', 'When', ''].map((c) => h('th', { scope: 'col' }, c)))),
          h(
            'tbody',
            {},
            history.items.map((v) =>
              h(
                'tr',
                {},
                h('td', { 'data-label': 'Version' }, String(v.version)),
                h('td', { 'data-label': 'Change' }, v.changeAction),
                h('td', { 'data-label': 'Name' }, v.name),
                h('td', { 'data-label': 'Status' }, v.status),
                h('td', { 'data-label': 'When' }, formatTime(v.changedDate)),
                h(
                  'td',
                  {},
                  v.version === template.version
                    ? h('span', { class: 'hint' }, 'current')
                    : h(
                        'button',
                        {
                          type: 'button',
                          onclick: async () => {
                            problem.textContent = ''
                            notice.textContent = ''
                            try {
                              await ctx.session.call('POST', `${API}/${encodeURIComponent(id!)}/rollback`, { version: v.version }, { 'if-match': `"${template.version}"` })
                              notice.textContent = `Rolled back to version ${v.version}'s content (a new version).`
                              await load()
                            } catch (err) {
                              problem.textContent = `Not rolled back: ${(err as Error).message}`
                            }
                          }
                        },
                        `Roll back to version ${v.version}`
                      )
                )
              )
            )
          )
        )
      )
    } catch (err) {
      problem.textContent = (err as Error).message
    }
  }
  void load()
}
