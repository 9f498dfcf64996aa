#!/usr/bin/env node
// Runtime import cycles among the workspace's TypeScript sources (server, agent, packages/*). In a
// cycle of ES modules one of them runs before the other has finished: what it imports from it is not
// there yet (a TDZ error, or undefined read at load), and which one wins depends on which file some
// caller happened to import first. `import type` and `import { type X }` vanish when compiled and
// make no cycle. Pure (runtimeImports, importGraph, importCycles) but for readSources;
// import-cycles.test.mjs runs it on the tree. By hand: `node scripts/import-cycles.mjs`.
import { readdirSync, readFileSync } from 'node:fs'
import { join, posix, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Code only tests load (as the packages' tsconfig.json leave it out of the build): no cycle of theirs reaches a user. */
export const isTestCode = (path) => /(\.test\.|\.fixture\.|(^|\/)test-support\/|(^|\/)test-(helpers|fixtures)\.)/.test(path)

// Comments and template literals blanked (newlines kept, so the line anchors below still hold);
// quoted strings matched first and kept, so a `//` or `/*` inside one is not taken for a comment.
const NOISE = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\[\s\S])*`/g
// `import|export [type] <clause> from '<specifier>'`, the clause one of: X | { ... } | * [as X] | X, { ... } | X, * as Y.
const FROM = /^[ \t]*(?:import|export)[ \t]+(type[ \t]+)?((?:[\w$]+[ \t]*,[ \t]*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+))\s*from\s*(['"])([^'"\n]+)\3/gm
const BARE = /^[ \t]*import\s*(['"])([^'"\n]+)\1/gm
const DYNAMIC = /(?<![\w$.])import\s*\(\s*(['"])([^'"\n]+)\1\s*[,)]/g

/** Whether an import's clause names only types: `{ type A, type B }` (the `import type` form is matched apart). */
function namesOnlyTypes(clause) {
  if (!clause.startsWith('{')) return false
  const names = clause.slice(1, -1).split(',').map((name) => name.trim()).filter(Boolean)
  return names.length > 0 && names.every((name) => /^type\s/.test(name))
}

/**
 * The specifiers a module loads when it runs, in the order written: static imports and re-exports
 * (`export ... from`), side-effect imports and `import('...')` with a literal; not the type-only ones,
 * nor anything in a comment or a template literal.
 */
export function runtimeImports(text) {
  const code = text.replace(NOISE, (match) => (match[0] === '/' || match[0] === '`' ? match.replace(/[^\n]/g, ' ') : match))
  const found = []
  for (const m of code.matchAll(FROM)) if (!m[1] && !namesOnlyTypes(m[2])) found.push([m.index, m[4]])
  for (const m of code.matchAll(BARE)) found.push([m.index, m[2]])
  for (const m of code.matchAll(DYNAMIC)) found.push([m.index, m[2]])
  return found.sort((a, b) => a[0] - b[0]).map(([, specifier]) => specifier)
}

/**
 * Who imports whom at run time: `sources` maps each file (a path with `/`) to its text; the answer maps
 * each to the files among `sources` it imports by relative path. A package's name (`@club/storage`)
 * is no edge: the packages' build references already refuse a cycle between packages.
 */
export function importGraph(sources) {
  const graph = new Map()
  for (const [file, text] of sources) {
    const to = []
    for (const specifier of runtimeImports(text)) {
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue
      const path = posix.join(posix.dirname(file), specifier)
      // NodeNext names the compiled file (`./x.js` for x.ts); an older spelling may leave the extension out.
      const candidates = [path.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts'), path, `${path}.ts`, `${path}/index.ts`]
      const target = candidates.find((candidate) => sources.has(candidate))
      if (target !== undefined && !to.includes(target)) to.push(target)
    }
    graph.set(file, to)
  }
  return graph
}

/** The strongly connected components of `graph` (Tarjan's), each a list of files; iterative, so no depth limit. */
function components(graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const found = []
  let next = 0
  for (const start of graph.keys()) {
    if (index.has(start)) continue
    const work = [[start, 0]]
    index.set(start, next)
    low.set(start, next++)
    stack.push(start)
    onStack.add(start)
    while (work.length) {
      const frame = work[work.length - 1]
      const [node, i] = frame
      const edges = graph.get(node) ?? []
      if (i < edges.length) {
        frame[1]++
        const to = edges[i]
        if (!index.has(to)) {
          index.set(to, next)
          low.set(to, next++)
          stack.push(to)
          onStack.add(to)
          work.push([to, 0])
        } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)))
        continue
      }
      work.pop()
      if (work.length) {
        const parent = work[work.length - 1][0]
        low.set(parent, Math.min(low.get(parent), low.get(node)))
      }
      if (low.get(node) === index.get(node)) {
        const component = []
        let member
        do {
          member = stack.pop()
          onStack.delete(member)
          component.push(member)
        } while (member !== node)
        found.push(component)
      }
    }
  }
  return found
}

/** The shortest way from `from` back to itself through `members`, as its files in order (without the return), or undefined. */
function shortestCycle(graph, from, members) {
  const cameFrom = new Map()
  const queue = [from]
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue
      if (to === from) {
        const path = [node]
        while (path[0] !== from) path.unshift(cameFrom.get(path[0]))
        return path
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node)
        queue.push(to)
      }
    }
  }
  return undefined
}

/**
 * The import cycles of `graph`, each as its files in import order starting from the first by name
 * (a imports b, ..., the last imports a). Every file on some cycle is on one listed: for each, the
 * shortest cycle through it, repeats dropped, so a tangle of n files lists at most n cycles.
 */
export function importCycles(graph) {
  const cycles = new Map()
  for (const component of components(graph)) {
    const members = new Set(component)
    if (component.length === 1 && !(graph.get(component[0]) ?? []).includes(component[0])) continue
    for (const file of [...members].sort()) {
      const cycle = shortestCycle(graph, file, members)
      if (!cycle) continue
      const first = cycle.indexOf([...cycle].sort()[0])
      const rotated = [...cycle.slice(first), ...cycle.slice(0, first)]
      cycles.set(rotated.join('\n'), rotated)
    }
  }
  return [...cycles.values()].sort((a, b) => a.join('\n').localeCompare(b.join('\n')))
}

/** A cycle as a person reads it: `a.ts → b.ts → a.ts`. */
export const cycleText = (cycle) => [...cycle, cycle[0]].join(' → ')

/** The folders whose product code is checked, from the workspace root. */
export function sourceFolders(root) {
  const packages = readdirSync(join(root, 'packages'), { withFileTypes: true }).filter((entry) => entry.isDirectory())
  return ['server/src', 'agent/src', ...packages.map((entry) => `packages/${entry.name}/src`)]
}

/** Every product TypeScript file below `root`'s source folders, by its path from `root` (with `/`), and its text. */
export function readSources(root) {
  const sources = new Map()
  for (const folder of sourceFolders(root)) {
    for (const name of readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })) {
      const path = `${folder}/${name.split(sep).join('/')}`
      if (/\.m?ts$/.test(path) && !path.endsWith('.d.ts') && !isTestCode(path)) sources.set(path, readFileSync(join(root, path), 'utf8'))
    }
  }
  return sources
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const cycles = importCycles(importGraph(readSources(root)))
  for (const cycle of cycles) console.log(cycleText(cycle))
  if (cycles.length) process.exitCode = 1
  else console.log('no runtime import cycle')
}
