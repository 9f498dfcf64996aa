// The project's markdown links, checked as GitHub resolves them: a relative link must reach a file
// or folder that exists, and its #anchor a heading of the target as GitHub names it. Pure over a
// reader of files, so the test can hand it small in-memory cases; `node scripts/docs-links.mjs`
// prints what is broken in the workspace.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, posix } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The documents whose links are checked, relative to the workspace root, sorted. */
export function projectDocuments(root) {
  const inFolder = (dir, keep) =>
    existsSync(join(root, dir)) ? readdirSync(join(root, dir)).filter(keep).map((name) => `${dir}/${name}`) : []
  const packages = inFolder('packages', () => true)
    .map((dir) => `${dir}/README.md`)
    .filter((path) => existsSync(join(root, path)))
  return ['README.md', 'agent/README.md', 'bench/README.md', ...inFolder('docs', (name) => name.endsWith('.md')), ...packages]
    .filter((path) => existsSync(join(root, path)))
    .sort()
}

/** The workspace's files as the checker reads them. */
export function fileReader(root) {
  return {
    exists: (path) => existsSync(join(root, path)),
    read: (path) => {
      const full = join(root, path)
      return existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : undefined
    }
  }
}

/**
 * The text with every fenced code block's lines blanked (line numbers kept): nothing in a code block
 * is a heading or a link.
 */
export function withoutCodeBlocks(markdown) {
  let fence = null
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1]
      if (fence) {
        if (marker && marker[0] === fence[0] && marker.length >= fence.length && /^ {0,3}[`~]+\s*$/.test(line)) fence = null
        return ''
      }
      if (marker && !(marker[0] === '`' && line.slice(line.indexOf(marker) + marker.length).includes('`'))) {
        fence = marker
        return ''
      }
      return line
    })
    .join('\n')
}

/** Inline code spans blanked, keeping the text's length and line breaks (a span never crosses a blank line). */
function withoutCodeSpans(text) {
  return text.replace(/(`+)(?:[^`\n]|\n(?![ \t]*\n)|(?!\1)`+)*?\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '))
}

/** A heading's text as GitHub renders it: inline markup gone, link and code texts kept. */
function renderedText(raw) {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`+/g, '')
    .replace(/\\(.)/g, '$1')
    .trim()
}

/** GitHub's anchor for a heading's text (github-slugger): lower case, punctuation dropped, spaces to `-`. */
export function slug(text) {
  return renderedText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor a document has: its headings' slugs, a repeated one numbered `-1`, `-2`…, and HTML ids and names. */
export function anchorsOf(markdown) {
  const lines = withoutCodeBlocks(markdown).split('\n')
  const occurrences = new Map()
  const anchors = new Set()
  const add = (text) => {
    const base = slug(text)
    let result = base
    while (occurrences.has(result)) {
      occurrences.set(base, occurrences.get(base) + 1)
      result = `${base}-${occurrences.get(base)}`
    }
    occurrences.set(result, 0)
    anchors.add(result)
  }
  lines.forEach((line, i) => {
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line)
    if (atx) return add(atx[1] ?? '')
    const previous = lines[i - 1]
    if (/^ {0,3}(=+|-+)[ \t]*$/.test(line) && previous && /^ {0,3}[^\s#>|*+-]/.test(previous) && !/^ {0,3}\d+[.)]\s/.test(previous)) {
      add(previous)
    }
  })
  for (const match of markdown.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) anchors.add(match[1])
  return anchors
}

/** Every link and image of a document outside code, with its line: inline ones and reference definitions. */
export function linksOf(markdown) {
  const text = withoutCodeSpans(withoutCodeBlocks(markdown))
  const lineOf = (index) => text.slice(0, index).split('\n').length
  const found = []
  const inline = /!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?\s*\)/g
  for (const match of text.matchAll(inline)) found.push({ target: match[1].replace(/^<|>$/g, ''), line: lineOf(match.index) })
  for (const match of text.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^<>\n]*>|\S+)/gm)) {
    found.push({ target: match[1].replace(/^<|>$/g, ''), line: lineOf(match.index) })
  }
  return found.sort((a, b) => a.line - b.line)
}

/**
 * The broken links of `documents` (paths from the root), read through `files` ({exists, read}).
 * Answers `{ problems, checked }`: one line per broken link, and how many relative links were checked.
 * Links with a scheme (http, https, mailto, …) are left alone: they leave the repository.
 */
export function checkLinks(documents, files) {
  const problems = []
  const anchorCache = new Map()
  const anchorsIn = (path) => {
    if (!anchorCache.has(path)) anchorCache.set(path, anchorsOf(files.read(path) ?? ''))
    return anchorCache.get(path)
  }
  let checked = 0
  for (const document of documents) {
    const markdown = files.read(document)
    if (markdown === undefined) {
      problems.push(`${document}: no such document`)
      continue
    }
    for (const { target, line } of linksOf(markdown)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      checked++
      const where = `${document}:${line}: ${target}`
      const hash = target.indexOf('#')
      const rawPath = hash < 0 ? target : target.slice(0, hash)
      let fragment = hash < 0 ? null : target.slice(hash + 1)
      let path
      try {
        path = decodeURIComponent(rawPath)
        if (fragment !== null) fragment = decodeURIComponent(fragment)
      } catch {
        problems.push(`${where}: not a valid address`)
        continue
      }
      const resolved = path === '' ? document : posix.normalize(path.startsWith('/') ? path.slice(1) : posix.join(posix.dirname(document), path)).replace(/\/$/, '')
      if (resolved === '..' || resolved.startsWith('../')) {
        problems.push(`${where}: leads out of the repository`)
        continue
      }
      if (!files.exists(resolved)) {
        problems.push(`${where}: ${resolved} does not exist`)
        continue
      }
      if (fragment && /\.md$/i.test(resolved) && !anchorsIn(resolved).has(fragment)) {
        problems.push(`${where}: ${resolved} has no heading whose anchor is #${fragment}`)
      }
    }
  }
  return { problems, checked }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const { problems, checked } = checkLinks(projectDocuments(root), fileReader(root))
  for (const problem of problems) console.log(problem)
  console.log(`${checked} relative links checked, ${problems.length} broken`)
  process.exitCode = problems.length ? 1 : 0
}
