// A few lines instead of a framework: elements made from a tag, properties and children, and a
// region of the page replaced as a whole when its data changes.

export type Child = Node | string | number | null | undefined | false | Child[]
type Handler = (event: Event) => void
export type Props = Record<string, string | number | boolean | null | undefined | Handler>

/** `h('button', { class: 'primary', onclick: save }, 'Save')`. Text children are text, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue
    if (typeof value === 'function') element.addEventListener(key.slice(2), value)
    else if (key === 'value' || key === 'checked' || key === 'selected') (element as unknown as Record<string, unknown>)[key] = value
    else element.setAttribute(key, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child)
    else parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)))
  }
}

/** Replaces what `target` shows. */
export function show(target: Element, ...children: Child[]): void {
  target.replaceChildren()
  append(target, children)
}

/** A labelled control: the label names it for screen readers and a tap on it focuses it. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || (control.id = `f-${Math.random().toString(36).slice(2, 10)}`)
  const hintId = hint ? `${id}-hint` : undefined
  if (hintId) control.setAttribute('aria-describedby', hintId)
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('small', { id: hintId, class: 'hint' }, hint) : null)
}

/** A page's heading, focusable so that a new page can move the focus to it. */
export function heading(text: string): HTMLHeadingElement {
  return h('h1', { tabindex: '-1' }, text)
}

/** A line of status for assistive technology too: polite for news, assertive for errors. */
export function liveRegion(kind: 'status' | 'alert'): HTMLParagraphElement {
  return h('p', { role: kind, class: kind === 'alert' ? 'error' : 'notice' })
}
