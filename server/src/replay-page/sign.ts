// A court's printable sign: the club's name, the court's name, a QR code of its page and one line of
// instructions. The SVG is drawn here (the QR matrix from the qrcode package, as one path of squares);
// the A5 PDF is made with pdf-lib, the QR drawn as vector squares too, so it prints sharp at any size.
import { CourtSignQuery } from '@club/contract'
import type { PDFFont } from 'pdf-lib'
import { replayPageSeconds, type Config } from '../config.js'
import { escapeMarkup } from '../html.js'
import { fill, type CourtWords } from '@club/web/court'

interface SignText {
  clubName: string
  courtName: string
  url: string
  instructions: string
}

/** A5 in millimetres (the SVG's units) and in PDF points. */
const A5_MM = { width: 148, height: 210 }
const MM = 72 / 25.4
const GREEN = '#0b5d3b'

/** The QR code's dark modules as [column, row] pairs, and its size in modules (without the quiet zone). */
async function qrModules(url: string): Promise<{ size: number; dark: Array<[number, number]> }> {
  // Loaded when a sign is first drawn, as pdf-lib is (below): few processes ever draw one.
  const { default: QRCode } = await import('qrcode')
  // Level M: a sign gets scuffed and photographed at an angle; the address is short enough for it.
  const qr = QRCode.create(url, { errorCorrectionLevel: 'M' })
  const { size, data } = qr.modules
  const dark: Array<[number, number]> = []
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) if (data[row * size + col]) dark.push([col, row])
  }
  return { size, dark }
}

/** The instructions in lines of at most `width` characters, broken between words. */
export function wrap(text: string, width = 40): string[] {
  const lines: string[] = []
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines[lines.length - 1]
    if (last !== undefined && (last + ' ' + word).length <= width) lines[lines.length - 1] = `${last} ${word}`
    else lines.push(word)
  }
  return lines
}

/** The QR area: a square of `side` mm at (x, y), four modules of quiet zone inside it. */
function qrLayout(size: number, side: number) {
  const module = side / (size + 8)
  return { module, inset: 4 * module }
}

async function courtSignSvg(text: SignText): Promise<string> {
  const { width, height } = A5_MM
  const { size, dark } = await qrModules(text.url)
  const side = 110
  const x = (width - side) / 2
  const y = 52
  const { module, inset } = qrLayout(size, side)
  const path = dark.map(([c, r]) => `M${(x + inset + c * module).toFixed(3)} ${(y + inset + r * module).toFixed(3)}h${module.toFixed(3)}v${module.toFixed(3)}h-${module.toFixed(3)}z`).join('')
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}mm" height="${height}mm" viewBox="0 0 ${width} ${height}">`,
    `<title>${escapeMarkup(`${text.clubName}: ${text.courtName}`)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<rect width="${width}" height="30" fill="${GREEN}"/>`,
    `<text x="${width / 2}" y="19" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="9" font-weight="700" fill="#fff">${escapeMarkup(text.clubName)}</text>`,
    `<text x="${width / 2}" y="46" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="12" font-weight="700" fill="#111">${escapeMarkup(text.courtName)}</text>`,
    `<rect x="${x}" y="${y}" width="${side}" height="${side}" fill="#fff"/>`,
    `<path d="${path}" fill="#000" shape-rendering="crispEdges"/>`,
    ...wrap(text.instructions).map(
      (line, i) =>
        `<text x="${width / 2}" y="${y + side + 12 + i * 7}" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="5.2" fill="#111">${escapeMarkup(line)}</text>`
    ),
    `<text x="${width / 2}" y="${height - 10}" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="4" fill="#555">${escapeMarkup(text.url)}</text>`,
    '</svg>'
  ].join('\n')
}

/** `text` with the characters the standard PDF fonts cannot draw (WinAnsi) as "?". */
function drawable(font: PDFFont, text: string): string {
  return [...text]
    .map((ch) => {
      try {
        font.encodeText(ch)
        return ch
      } catch {
        return '?'
      }
    })
    .join('')
}

/** The largest size up to `max` at which `text` fits in `width` points. */
function fitted(font: PDFFont, text: string, max: number, width: number): number {
  return Math.min(max, (max * width) / Math.max(1, font.widthOfTextAtSize(text, max)))
}

async function courtSignPdf(text: SignText): Promise<Uint8Array> {
  // Loaded when a PDF is first asked for: pdf-lib is a fifth of the server's start-up and few
  // processes (a test app, a CLI command, most servers' days) ever draw a sign.
  const { PDFDocument, StandardFonts, rgb } = await import('pdf-lib')
  const pdf = await PDFDocument.create()
  pdf.setTitle(`${text.clubName}: ${text.courtName}`)
  pdf.setCreator('club platform')
  const width = A5_MM.width * MM
  const height = A5_MM.height * MM
  const page = pdf.addPage([width, height])
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const green = rgb(0x0b / 255, 0x5d / 255, 0x3b / 255)
  const margin = 12 * MM
  const centred = (font: PDFFont, raw: string, max: number, y: number, color = rgb(0.07, 0.07, 0.07)) => {
    const line = drawable(font, raw)
    const size = fitted(font, line, max, width - 2 * margin)
    page.drawText(line, { x: (width - font.widthOfTextAtSize(line, size)) / 2, y, size, font, color })
  }
  // PDF's y runs upwards: the layout of the SVG, mirrored.
  page.drawRectangle({ x: 0, y: height - 30 * MM, width, height: 30 * MM, color: green })
  centred(bold, text.clubName, 9 * MM, height - 19 * MM, rgb(1, 1, 1))
  centred(bold, text.courtName, 12 * MM, height - 46 * MM)
  const { size, dark } = await qrModules(text.url)
  const side = 110 * MM
  const { module, inset } = qrLayout(size, side)
  const left = (width - side) / 2
  const top = height - 52 * MM
  for (const [c, r] of dark) {
    page.drawRectangle({ x: left + inset + c * module, y: top - inset - (r + 1) * module, width: module, height: module, color: rgb(0, 0, 0) })
  }
  wrap(text.instructions).forEach((line, i) => centred(regular, line, 5.2 * MM, top - side - (12 + i * 7) * MM))
  centred(regular, text.url, 4 * MM, 10 * MM, rgb(0.33, 0.33, 0.33))
  return pdf.save()
}

export type SignFormat = NonNullable<CourtSignQuery['format']>

/** Whether `value` names a format of the contract's CourtSignQuery (for input that did not come through it). */
export function isSignFormat(value: string): value is SignFormat {
  return (CourtSignQuery.properties.format.enum as readonly string[]).includes(value)
}

/** A court's sign as the route answers it and `club courts signs` writes it. */
export async function courtSign(
  court: { name: string; slug: string },
  config: Pick<Config, 'CLUB_NAME' | 'PUBLIC_BASE_URL' | 'REPLAY_PAGE_SECONDS' | 'REPLAY_MAX_SECONDS'>,
  words: CourtWords,
  format: SignFormat
): Promise<{ type: string; body: Buffer }> {
  const text: SignText = {
    clubName: config.CLUB_NAME,
    courtName: court.name,
    url: `${config.PUBLIC_BASE_URL.replace(/\/+$/, '')}/r/${court.slug}`,
    instructions: fill(words['sign.instructions'], { seconds: replayPageSeconds(config)[0]! })
  }
  if (format === 'pdf') return { type: 'application/pdf', body: Buffer.from(await courtSignPdf(text)) }
  return { type: 'image/svg+xml; charset=utf-8', body: Buffer.from(await courtSignSvg(text)) }
}
