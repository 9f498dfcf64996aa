// A member's matches on the court page (issue 49): the bookings and events they played in, recorded
// whole by every camera of the court. The list spends nothing; opening a match may (a REPLAY item
// under MATCH_REQUIRES_PACKAGE), so it is a tap. An opened match plays in its card: a button per
// camera, and the chapters (the replays asked for during it) to jump the video to.
import type { Chapter, Match, MatchCollection, Replay } from '@club/contract'
import type { CourtWords } from './words.js'
import { say, type CourtPageConfig, type ScriptWordKey } from './view.js'

/** Where a chapter is in the match, as a player reads it: minutes and seconds (93:05 in a long one). */
export function chapterTime(at: number): string {
  const seconds = Math.floor(at)
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`
}

/** A chapter's button: its label and moment, and the player's own rally (one with its `replay`) said so. */
export function chapterText(words: Partial<CourtWords>, chapter: Chapter): string {
  return [chapter.label, chapterTime(chapter.at), chapter.replay && say(words, 'match.yours')].filter(Boolean).join(' · ')
}

/** What the page lends this module (main.ts). */
export interface MatchPage {
  cfg: CourtPageConfig
  /** A GET with the member's credential: its answer, or thrown. */
  get<T>(path: string): Promise<T>
  /** Says in `box` why a call failed. */
  fail(err: unknown, box: HTMLElement): void
}

const $ = (id: string) => document.getElementById(id)!

function element(tag: string, text = '', className = '', id = ''): HTMLElement {
  const made = document.createElement(tag)
  made.textContent = text
  made.className = className
  if (id) made.id = id
  return made
}
function button(text: string, onClick: () => void): HTMLButtonElement {
  const made = element('button', text) as HTMLButtonElement
  made.type = 'button'
  made.addEventListener('click', onClick)
  return made
}

export async function loadMatches(page: MatchPage): Promise<void> {
  const { cfg } = page
  const t = (key: ScriptWordKey, values?: Record<string, string | number>) => say(cfg.strings, key, values)
  // A booking's own time, whatever the phone's clock says (unlike a tap, it was not made on the phone).
  const minute = (iso: string, weekday?: 'short') => new Date(iso).toLocaleString(cfg.lang, { weekday, hour: '2-digit', minute: '2-digit' })
  /** Its court (named when it is this page's) and its time. */
  const title = (match: Match) =>
    t('match.item', { court: match.court.id === cfg.court.id ? cfg.court.name : t('match.elsewhere'), time: `${minute(match.start, 'short')}–${minute(match.end)}` })

  async function open(listed: Match): Promise<void> {
    // The card between the matches and the clips, made afresh for each match opened.
    $('match')?.remove()
    const card = element('section', '', 'card', 'match')
    const message = element('p', '', 'notice', 'match-message')
    card.dataset.id = listed.id
    card.append(element('p', title(listed), 'state'), message)
    $('mine').before(card)
    card.scrollIntoView({ behavior: 'smooth' })
    let match: Match
    try {
      match = await page.get<Match>(`/matches/${encodeURIComponent(listed.id)}`)
    } catch (err) {
      // A 402 is no REPLAY item left to open it with: said with the shop's link.
      return page.fail(err, message)
    }
    const angles = element('div', '', 'actions', 'angles')
    const video = element('video', '', '', 'match-player') as HTMLVideoElement
    const chapters = element('ol', '', '', 'chapters')
    video.controls = video.playsInline = true
    video.preload = 'auto'
    card.append(angles, video)
    if (match.chapters.length) card.append(element('h3', t('match.chapters')), chapters)
    // Switching cameras keeps the moment, so a rally is seen from the other side.
    const play = (angle: Replay, pressed: Element) => {
      for (const b of angles.children) b.setAttribute('aria-pressed', String(b === pressed))
      const at = video.currentTime
      video.src = angle.downloadUrl!
      video.currentTime = at
    }
    match.angles.forEach((angle, i) => {
      const name = t('match.angle', { n: i + 1 })
      const b = button(angle.status === 'READY' ? name : `${name}: ${t(`status.${angle.status}`)}`, () => play(angle, b))
      b.dataset.camera = angle.camera.id
      b.disabled = !angle.downloadUrl
      angles.append(b)
    })
    for (const chapter of match.chapters) {
      const li = element('li', '', chapter.replay ? 'yours' : '')
      li.append(button(chapterText(cfg.strings, chapter), () => (video.currentTime = chapter.at)))
      chapters.append(li)
    }
    const first = match.angles.findIndex((angle) => angle.downloadUrl)
    video.hidden = first < 0
    if (first >= 0) play(match.angles[first]!, angles.children[first]!)
  }

  let answer: MatchCollection
  try {
    answer = await page.get<MatchCollection>('/matches?ipp=10')
  } catch {
    return // As "My replays": the list stays as it was.
  }
  const list = $('matches')
  list.textContent = ''
  for (const match of answer.items) {
    const li = element('li')
    li.dataset.id = match.id
    li.dataset.status = match.status
    li.append(element('span', title(match)), match.status === 'READY' ? button(t('mine.play'), () => void open(match)) : element('span', t(`status.${match.status}`), 'muted'))
    list.append(li)
  }
  list.dataset.loaded = ''
}
