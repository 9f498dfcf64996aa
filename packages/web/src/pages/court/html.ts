// The court page's HTML, written by the server for each request: the words of the chosen language in
// place (the page reads before its script runs), and the settings the script needs inline as JSON.
// The script and the style sheet are the page's assets, named by the server's page pipeline.
import type { FootageNotice } from '@club/contract'
import type { CourtPageConfig, ScriptWordKey, ScriptWords } from './view.js'
import { fill, type CourtWords, type WordKey } from './words.js'

const ENTITIES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' }
const escape = (text: string) => text.replace(/[<>&"']/g, (c) => ENTITIES[c]!)

/** JSON safe inside a <script> element: no "</script>" or "<!--" can close it. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

/** Where the page's two assets are, as the server serves them. */
export interface CourtAssets {
  script: string
  style: string
}

function head(lang: string, title: string, style: string): string {
  return (
    `<!doctype html><html lang="${escape(lang)}"><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1,viewport-fit=cover">' +
    `<meta name="theme-color" content="#0b5d3b"><title>${escape(title)}</title>` +
    `<link rel="stylesheet" href="${style}">`
  )
}

/** The words the script says (the compiler keeps this list whole: a key missing or extra does not compile). */
const SCRIPT_WORDS: Record<ScriptWordKey, true> = {
  'signin.submit': true,
  'signin.busy': true,
  'signin.failed': true,
  'signin.signedInAs': true,
  'signin.guest': true,
  'status.REQUESTED': true,
  'status.EXPORTING': true,
  'status.UPLOADING': true,
  'status.READY': true,
  'status.FAILED': true,
  'status.EXPIRED': true,
  'status.TAKEN_DOWN': true,
  'reason.no_footage': true,
  'reason.box_unreachable': true,
  'reason.recording_ended': true,
  'reason.camera_error': true,
  'reason.upload_failed': true,
  'reason.other': true,
  'failed.itemBack': true,
  'error.noItem': true,
  'error.buy': true,
  'error.tooMany': true,
  'error.cameraFailed': true,
  'error.other': true,
  'offline.waiting': true,
  'offline.tooOld': true,
  'server.retrying': true,
  'sending': true,
  'ready.copied': true,
  'mine.empty': true,
  'mine.play': true,
  'mine.item': true,
  'match.item': true,
  'match.elsewhere': true,
  'match.angle': true,
  'match.yours': true,
  'match.chapters': true
}

/** Of a language's words, those the script says. */
export function scriptWords(words: CourtWords): ScriptWords {
  return Object.fromEntries(Object.keys(SCRIPT_WORDS).map((key) => [key, words[key as ScriptWordKey]])) as ScriptWords
}

export interface CourtPageInput {
  lang: string
  words: CourtWords
  clubName: string
  court: CourtPageConfig['court']
  /** The buttons: one a replay length (REPLAY_PAGE_SECONDS). */
  seconds: number[]
  assets: CourtAssets
  settings: Omit<CourtPageConfig, 'lang' | 'court' | 'strings'>
  /** What is recorded and for how long, said on the page (issue 33). */
  notice: FootageNotice
}

export function courtPageHtml(input: CourtPageInput): string {
  const w = (key: WordKey, values: Record<string, string | number> = {}) => escape(fill(input.words[key], values))
  const config: CourtPageConfig = { lang: input.lang, court: input.court, strings: scriptWords(input.words), ...input.settings }
  const buttons = input.seconds.map((s) => `<button type="button" class="tap" data-seconds="${s}">${w('tap.label', { seconds: s })}</button>`).join('')
  return (
    head(input.lang, `${input.court.name} · ${input.clubName}`, input.assets.style) +
    `<script type="application/json" id="config">${inlineJson(config)}</script>` +
    `<script type="module" src="${input.assets.script}"></script></head><body>` +
    `<header><p class="club">${escape(input.clubName)}</p><h1 id="court">${escape(input.court.name)}</h1></header><main>` +
    `<noscript><p class="notice">${w('noscript')}</p></noscript>` +
    `<section id="signin" hidden><h2>${w('signin.title')}</h2><form id="signin-form">` +
    `<label>${w('signin.email')}<input type="email" name="email" autocomplete="username" required></label>` +
    `<label>${w('signin.password')}<input type="password" name="password" autocomplete="current-password" required></label>` +
    `<button type="submit" class="primary">${w('signin.submit')}</button><p id="signin-error" class="error" role="alert"></p></form></section>` +
    `<section id="taps" hidden><div class="buttons">${buttons}</div><p id="notice" class="notice" role="status"></p>` +
    '<section id="current" class="card" hidden aria-live="polite"><ol id="steps" class="steps"><li></li><li></li><li></li><li></li></ol>' +
    '<p id="state" class="state"></p><p id="message"></p><video id="player" controls playsinline preload="auto" hidden></video>' +
    `<div id="actions" class="actions" hidden><a id="download" class="button primary" download>${w('ready.download')}</a>` +
    `<button id="share" type="button">${w('ready.share')}</button></div></section>` +
    // A member's matches (issue 49) above their clips (match.ts fills them and adds an opened one's card).
    `<h2>${w('mine.title')}</h2><ul id="matches" class="mine"></ul><ul id="mine" class="mine"></ul></section>` +
    `<p class="account"><span id="who" class="muted"></span> <button id="show-signin" type="button" class="link" hidden>${w('signin.show')}</button>` +
    `<button id="signout" type="button" class="link" hidden>${w('signout')}</button></p>` +
    `<p id="footage-notice" class="muted">${w('footage.notice', { replayDays: input.notice.replayRetentionDays, logDays: input.notice.footageLogRetentionDays })} ` +
    `${input.notice.contact ? w('footage.contact', { contact: input.notice.contact }) : w('footage.desk')}</p>` +
    '</main></body></html>'
  )
}

/** "No such court", in words, for a person who followed a wrong code. */
export function courtNotFoundHtml(input: { lang: string; words: CourtWords; clubName: string; style: string }): string {
  const w = (key: WordKey) => escape(fill(input.words[key], { club: input.clubName }))
  return (
    head(input.lang, `${input.words['notFound.title']} · ${input.clubName}`, input.style) +
    `</head><body><header><p class="club">${escape(input.clubName)}</p><h1>${w('notFound.title')}</h1></header>` +
    `<main><p id="not-found">${w('notFound.text')}</p></main></body></html>`
  )
}
