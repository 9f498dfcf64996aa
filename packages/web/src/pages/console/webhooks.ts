// Webhook endpoints (admins): where the platform sends its events. Add one (its secret is shown once,
// here, to copy into the receiver), turn one off or on, rotate its secret, remove it, and read its
// deliveries with every attempt, sending a failed one again.
import type { EndpointDelivery, Paged, WebhookEndpoint, WebhookEndpointWithSecret } from '@club/contract'
import { field, h, heading, liveRegion, show } from '../shared/dom.js'
import { formatTime } from '../shared/format.js'
import type { Context, PageView } from './page.js'
import { listTable, pager } from './paging.js'
import { deliveryText, eventTypesOf } from './view.js'

const PATH = '/apis/v2/admin/webhook-endpoints'
const IPP = 20

/** The secret, shown once with what to do with it. */
function secretNotice(endpoint: WebhookEndpointWithSecret, what: string): HTMLElement {
  return h(
    'div',
    { class: 'card', role: 'status', id: 'webhook-secret' },
    h('p', {}, `${what} Its signing secret is shown this once: copy it into the receiver now (Standard Webhooks, e.g. new Webhook(secret)).`),
    h('code', { class: 'secret' }, endpoint.secret)
  )
}

export const webhookList: PageView = (ctx, main) => {
  const url = h('input', { name: 'url', type: 'url', required: true, autocomplete: 'off', placeholder: 'https://integrator.example.com/hooks' })
  const types = h('textarea', { name: 'eventTypes', rows: 2, required: true, placeholder: 'membership_subscription.renewed package.issued' })
  const description = h('input', { name: 'description', type: 'text', maxlength: 500 })
  const results = h('div', { 'aria-live': 'polite' })
  const secret = h('div', {})
  const problem = liveRegion('alert')
  const done = liveRegion('status')
  let page = 1
  const act = async (what: () => Promise<unknown>, success: string) => {
    try {
      await what()
      problem.textContent = ''
      done.textContent = success
      await load()
    } catch (err) {
      problem.textContent = (err as Error).message
    }
  }
  const load = async () => {
    try {
      const answer = await ctx.session.call<Paged<WebhookEndpoint>>('GET', `${PATH}?page=${page}&ipp=${IPP}`)
      show(
        results,
        answer.items.length === 0
          ? h('p', {}, 'No webhook endpoint yet: events are sent nowhere.')
          : listTable(
              ['URL', 'Event types', 'State', 'Actions'],
              answer.items.map((e) => [
                h('a', { href: `#/webhooks/${encodeURIComponent(e.id)}` }, e.url),
                e.eventTypes.join(' '),
                e.enabled ? (e.failingSince ? `failing since ${formatTime(e.failingSince)}` : 'on') : `off${e.disabledReason ? ` (${e.disabledReason})` : ''}`,
                h(
                  'span',
                  {},
                  h(
                    'button',
                    {
                      type: 'button',
                      'aria-label': `${e.enabled ? 'Turn off' : 'Turn on'} ${e.url}`,
                      onclick: () => void act(() => ctx.session.call('PATCH', `${PATH}/${encodeURIComponent(e.id)}`, { enabled: !e.enabled }), e.enabled ? 'Turned off.' : 'Turned on.')
                    },
                    e.enabled ? 'Turn off' : 'Turn on'
                  ),
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      onclick: async () => {
                        try {
                          const rotated = await ctx.session.call<WebhookEndpointWithSecret>('POST', `${PATH}/${encodeURIComponent(e.id)}/secret`)
                          show(secret, secretNotice(rotated, `New secret for ${rotated.url}: the old one keeps signing too for 24 hours.`))
                        } catch (err) {
                          problem.textContent = (err as Error).message
                        }
                      },
                      'aria-label': `New secret for ${e.url}`
                    },
                    'New secret'
                  ),
                  ' ',
                  h('button', { type: 'button', 'aria-label': `Remove ${e.url}`, onclick: () => void act(() => ctx.session.call('DELETE', `${PATH}/${encodeURIComponent(e.id)}`), 'Removed.') }, 'Remove')
                )
              ])
            ),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The webhook endpoints could not be loaded: ${(err as Error).message}`
    }
  }
  const add = async (event: Event) => {
    event.preventDefault()
    try {
      const body = { url: url.value.trim(), eventTypes: eventTypesOf(types.value), ...(description.value.trim() ? { description: description.value.trim() } : {}) }
      const made = await ctx.session.call<WebhookEndpointWithSecret>('POST', PATH, body)
      show(secret, secretNotice(made, `Endpoint ${made.url} added.`))
      problem.textContent = ''
      url.value = ''
      types.value = ''
      description.value = ''
      await load()
    } catch (err) {
      problem.textContent = `Not added: ${(err as Error).message}`
    }
  }
  show(
    main,
    heading('Webhook endpoints'),
    h('p', {}, 'Each event of the types named is POSTed to the URL, signed (Standard Webhooks), and retried for 3 days until it answers 2xx.'),
    secret,
    h(
      'form',
      { class: 'card', onsubmit: add },
      h('h2', {}, 'Add an endpoint'),
      field('URL', url, 'http(s), at a public address (or in WEBHOOK_ALLOWED_NETWORKS)'),
      field('Event types', types, 'Separated by spaces or commas, such as replay.ready package.issued'),
      field('Description (optional)', description),
      h('button', { type: 'submit', class: 'primary' }, 'Add the endpoint')
    ),
    problem,
    done,
    results
  )
  void load()
}

export const webhookPage: PageView = (ctx: Context, main, id) => {
  const endpointId = id ?? ''
  const results = h('div', { 'aria-live': 'polite' })
  const problem = liveRegion('alert')
  const done = liveRegion('status')
  let page = 1
  const load = async () => {
    try {
      const [endpoint, answer] = await Promise.all([
        ctx.session.call<WebhookEndpoint>('GET', `${PATH}/${encodeURIComponent(endpointId)}`),
        ctx.session.call<Paged<EndpointDelivery>>('GET', `${PATH}/${encodeURIComponent(endpointId)}/deliveries?page=${page}&ipp=${IPP}`)
      ])
      show(
        results,
        h('p', {}, `${endpoint.url}: ${endpoint.enabled ? 'on' : 'off'}; ${endpoint.eventTypes.join(' ')}`),
        answer.items.length === 0
          ? h('p', {}, 'Nothing sent yet.')
          : listTable(
              ['Event', 'Type', 'Status', 'Attempts', 'Next attempt', ''],
              answer.items.map((d) => [
                d.event.id,
                d.type,
                deliveryText(d),
                d.attempts.map((a) => `${formatTime(a.date)}: ${a.responseStatus ?? a.error ?? '—'} (${a.durationMs} ms)`).join('; ') || '—',
                d.nextAttemptDate ? formatTime(d.nextAttemptDate) : '—',
                h(
                  'button',
                  {
                    type: 'button',
                    onclick: async () => {
                      try {
                        await ctx.session.call('POST', `${PATH}/${encodeURIComponent(endpointId)}/deliveries/${encodeURIComponent(d.id)}/retry`)
                        done.textContent = `Event ${d.event.id} is sent again now.`
                        problem.textContent = ''
                        await load()
                      } catch (err) {
                        problem.textContent = (err as Error).message
                      }
                    },
                    'aria-label': `Send ${d.event.id} again`
                  },
                  'Send again'
                )
              ])
            ),
        pager({ page, ipp: IPP, total: answer._total }, (next) => {
          page = next
          void load()
        })
      )
    } catch (err) {
      problem.textContent = `The deliveries could not be loaded: ${(err as Error).message}`
    }
  }
  show(main, heading('Deliveries'), h('p', {}, h('a', { href: '#/webhooks' }, '← Webhook endpoints')), problem, done, results)
  void load()
}
