// The court page's HTML: the words of the chosen language written in on the server (the page reads
// before its script runs), and the settings the script needs inline as JSON.
import { escapeMarkup } from '../html.js'
import type { FootageNotice } from '@club/contract'
import { fill, type Strings } from './strings.js'

/** JSON safe inside a <script> element: no "</script>" or "<!--" can close it. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

function head(lang: string, title: string, style: string): string {
  return (
    `<!doctype html><html lang="${escapeMarkup(lang)}"><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1,viewport-fit=cover">' +
    `<meta name="theme-color" content="#0b5d3b"><title>${escapeMarkup(title)}</title>` +
    `<link rel="stylesheet" href="${style}">`
  )
}

interface PageInput {
  lang: string
  words: Strings
  clubName: string
  court: { id: string; name: string; slug: string }
  seconds: number[]
  script: string
  style: string
  settings: { guests: boolean; requirePackage: boolean; shopUrl: string; serverNow: number; maxAgeSeconds: number }
  /** What is recorded and for how long, said on the page (issue 33). */
  notice: FootageNotice
}

export function pageHtml(input: PageInput): string {
  const w = (key: string, values: Record<string, string | number> = {}) => escapeMarkup(fill(input.words[key] ?? key, values))
  const config = { lang: input.lang, court: input.court, strings: input.words, ...input.settings }
  const buttons = input.seconds.map((s) => `<button type="button" class="tap" data-seconds="${s}">${w('tap.label', { seconds: s })}</button>`).join('')
  return (
    head(input.lang, `${input.court.name} · ${input.clubName}`, input.style) +
    `<script type="application/json" id="config">${inlineJson(config)}</script>` +
    `<script src="${input.script}" defer></script></head><body>` +
    `<header><p class="club">${escapeMarkup(input.clubName)}</p><h1 id="court">${escapeMarkup(input.court.name)}</h1></header><main>` +
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
    `<h2>${w('mine.title')}</h2><ul id="mine"></ul></section>` +
    `<p class="account"><span id="who" class="muted"></span> <button id="show-signin" type="button" class="link" hidden>${w('signin.show')}</button>` +
    `<button id="signout" type="button" class="link" hidden>${w('signout')}</button></p>` +
    `<p id="footage-notice" class="muted">${w('footage.notice', { replayDays: input.notice.replayRetentionDays, logDays: input.notice.footageLogRetentionDays })} ` +
    `${input.notice.contact ? w('footage.contact', { contact: input.notice.contact }) : w('footage.desk')}</p>` +
    '</main></body></html>'
  )
}

export function notFoundHtml(input: { lang: string; words: Strings; clubName: string; style: string }): string {
  const w = (key: string) => escapeMarkup(fill(input.words[key] ?? key, { club: input.clubName }))
  return (
    head(input.lang, `${input.words['notFound.title'] ?? ''} · ${input.clubName}`, input.style) +
    `</head><body><header><p class="club">${escapeMarkup(input.clubName)}</p><h1>${w('notFound.title')}</h1></header>` +
    `<main><p id="not-found">${w('notFound.text')}</p></main></body></html>`
  )
}
