// Text written into markup the server makes itself: the court page (HTML), its sign (SVG) and the
// daily summary e-mail (HTML).

const ENTITIES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' }

/** `text` safe as an element's text or a quoted attribute's value, in HTML and in XML alike (`&#39;`, not `&apos;`). */
export function escapeMarkup(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ENTITIES[c]!)
}
