// What the server takes of the court page (as `@club/web/court`): its HTML and its words, which the
// court's printable sign and the `club courts signs` command speak too.
export { courtNotFoundHtml, courtPageHtml, type CourtAssets, type CourtPageInput } from './html.js'
export { FALLBACK, LANGUAGES, chooseLanguage, fill, speaks, wordsFor, type CourtWords, type WordKey } from './words.js'
