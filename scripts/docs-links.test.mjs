// The documentation's links: the checker on small made-up documents (so it cannot pass by finding
// nothing), then on the workspace's own README, docs/ and package READMEs.
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { anchorsOf, checkLinks, fileReader, linksOf, projectDocuments, slug } from './docs-links.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))

/** An in-memory workspace: `files` maps paths to their text; `folders` lists folders that exist. */
function memory(files, folders = []) {
  return {
    exists: (path) => path in files || folders.includes(path),
    read: (path) => files[path]
  }
}

t.test("headings' anchors as GitHub names them", async (t) => {
  t.equal(slug('Rate limits across processes (Redis)'), 'rate-limits-across-processes-redis')
  t.equal(slug('The `club` command'), 'the-club-command')
  t.equal(slug('Takedown, "do not film", and clips that stay inside their bucket'), 'takedown-do-not-film-and-clips-that-stay-inside-their-bucket')
  t.equal(slug('Tests: stages and the fast loop'), 'tests-stages-and-the-fast-loop')
  t.equal(slug("The box's page"), 'the-boxs-page')
  t.equal(slug('`REPLAY_MAX_SECONDS` and its_limit'), 'replay_max_seconds-and-its_limit', 'underscores stay')
  t.equal(slug('A [linked](other.md) heading'), 'a-linked-heading', "a link's text stays, its address goes")
  t.equal(slug('Two  spaces'), 'two--spaces', 'each space is a hyphen')
  t.equal(slug('Über Größe'), 'über-größe', 'letters beyond ASCII stay')
})

t.test('a repeated heading gets -1, -2; headings in code blocks are none', async (t) => {
  const anchors = anchorsOf(['# Setup', '## Setup', '### Setup', '```sh', '# Not a heading', '```', 'Setext', '------', '#hashtag'].join('\n'))
  t.same([...anchors].sort(), ['setext', 'setup', 'setup-1', 'setup-2'])
})

t.test('links are found outside code only, with their line', async (t) => {
  const links = linksOf(
    [
      'See [one](a.md) and ![a picture](img/p.png "title").',
      '`[not a link](x.md)` in code',
      '```md',
      '[not a link either](y.md)',
      '```',
      'A link whose text [wraps',
      'a line](b.md#part) and <https://example.org>.',
      '[ref]: c.md'
    ].join('\n')
  )
  t.same(links, [
    { target: 'a.md', line: 1 },
    { target: 'img/p.png', line: 1 },
    { target: 'b.md#part', line: 6 },
    { target: 'c.md', line: 8 }
  ])
})

t.test('the checker: broken files and anchors are named, good links and other sites pass', async (t) => {
  const files = {
    'README.md': [
      '# Project',
      '[good file](docs/guide.md) [good anchor](docs/guide.md#install) [folder](docs)',
      '[broken file](docs/missing.md)',
      '[broken anchor](docs/guide.md#uninstall)',
      '[same page](#project) [same page, broken](#nowhere)',
      '[second install](docs/guide.md#install-1) [no third](docs/guide.md#install-2)',
      '[site](https://example.org/x.md) [mail](mailto:a@b.c) ![picture](docs/shot.png)'
    ].join('\n'),
    'docs/guide.md': ['# Guide', '## Install', 'Back to [the project](../README.md#project).', '## Install', '[outside](../../elsewhere.md)'].join('\n'),
    'docs/shot.png': ''
  }
  const { problems, checked } = checkLinks(['README.md', 'docs/guide.md'], memory(files, ['docs']))
  t.same(problems, [
    'README.md:3: docs/missing.md: docs/missing.md does not exist',
    'README.md:4: docs/guide.md#uninstall: docs/guide.md has no heading whose anchor is #uninstall',
    'README.md:5: #nowhere: README.md has no heading whose anchor is #nowhere',
    'README.md:6: docs/guide.md#install-2: docs/guide.md has no heading whose anchor is #install-2',
    'docs/guide.md:5: ../../elsewhere.md: leads out of the repository'
  ])
  t.equal(checked, 12, 'every relative link was looked at; the two other sites were not')
})

t.test('the project documents: every relative link reaches its file and heading', async (t) => {
  const documents = projectDocuments(root)
  for (const page of ['README.md', 'docs/README.md', 'agent/README.md', 'bench/README.md', 'packages/contract/README.md']) {
    t.ok(documents.includes(page), `${page} is checked`)
  }
  t.ok(documents.filter((path) => path.startsWith('docs/')).length >= 7, 'every docs page is checked')
  const { problems, checked } = checkLinks(documents, fileReader(root))
  t.same(problems, [], 'no broken link')
  t.ok(checked > 50, `${checked} links checked`)
})
