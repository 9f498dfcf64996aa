// The file:// driver with real files: what it opens is checked after the open (a parent folder swapped
// for a link between the path check and the open is refused), a hard link is refused, a plain file reads.
import t from 'tap'
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BucketError, FileBucket } from './index.js'

const SECRET = 'root:x:0:0:a file outside the bucket\n'

/** A bucket folder with `cam-1/clip.mp4`, and a folder outside it holding a file of the same name. */
function folders(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-storage-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const root = join(dir, 'bucket')
  mkdirSync(join(root, 'cam-1'), { recursive: true })
  writeFileSync(join(root, 'cam-1', 'clip.mp4'), 'clip bytes')
  const outside = join(dir, 'outside')
  mkdirSync(outside)
  writeFileSync(join(outside, 'clip.mp4'), SECRET)
  return { dir, root, outside, location: pathToFileURL(join(root, 'cam-1', 'clip.mp4')).href }
}

/** A bucket whose seam swaps `cam-1` for a link to `outside` after the path checks and before the open. */
class SwappedBucket extends FileBucket {
  constructor(
    root: string,
    private readonly swap: () => void
  ) {
    super(pathToFileURL(root).href, root)
  }

  protected override async checked(): Promise<void> {
    this.swap()
  }
}

async function read(bucket: FileBucket, location: string): Promise<string> {
  const { handle } = await bucket.openForRead(location)
  try {
    return (await handle.readFile()).toString()
  } finally {
    await handle.close()
  }
}

t.test('a plain file in the bucket opens and reads', async (t) => {
  const f = folders(t)
  const bucket = new FileBucket(pathToFileURL(f.root).href, f.root)
  const { handle, size } = await bucket.openForRead(f.location)
  t.equal(size, 10)
  t.equal((await handle.readFile()).toString(), 'clip bytes')
  await handle.close()
})

t.test('a parent folder swapped for a symbolic link between the check and the open: refused, nothing of the file outside read', async (t) => {
  const f = folders(t)
  const bucket = new SwappedBucket(f.root, () => {
    renameSync(join(f.root, 'cam-1'), join(f.dir, 'moved'))
    symlinkSync(f.outside, join(f.root, 'cam-1'))
  })
  const refused = bucket.openForRead(f.location)
  await t.rejects(refused, BucketError)
  await t.rejects(refused, /leads out of this bucket \(a folder swapped for a symbolic link\)/)
  t.equal(readFileSync(join(f.outside, 'clip.mp4'), 'utf8'), SECRET, 'the file outside is untouched')
})

t.test('without /proc: a folder swapped for a link and swapped back after the open is still caught, by its inode', async (t) => {
  const f = folders(t)
  const moved = join(f.dir, 'moved')
  class WithoutProc extends SwappedBucket {
    protected override async openedPath(): Promise<string | null> {
      // Right after the open: the path names the bucket's own file again, only the inode tells.
      rmSync(join(f.root, 'cam-1'))
      renameSync(moved, join(f.root, 'cam-1'))
      return null
    }
  }
  const bucket = new WithoutProc(f.root, () => {
    renameSync(join(f.root, 'cam-1'), moved)
    symlinkSync(f.outside, join(f.root, 'cam-1'))
  })
  await t.rejects(read(bucket, f.location), /changed while it was opened/)
  class PlainWithoutProc extends FileBucket {
    protected override async openedPath(): Promise<string | null> {
      return null
    }
  }
  t.equal(await read(new PlainWithoutProc(pathToFileURL(f.root).href, f.root), f.location), 'clip bytes', 'a file left alone still reads')
})

t.test('a hard link in the bucket to a file elsewhere: refused at the check and at the open', async (t) => {
  const f = folders(t)
  const bucket = new FileBucket(pathToFileURL(f.root).href, f.root)
  linkSync(join(f.outside, 'clip.mp4'), join(f.root, 'cam-1', 'linked.mp4'))
  const location = pathToFileURL(join(f.root, 'cam-1', 'linked.mp4')).href
  await t.rejects(bucket.realPathOf(location), /a file with other names \(a hard link\)/)
  await t.rejects(read(bucket, location), BucketError)
  // The same refusal when the link is made between the check and the open.
  const late = new SwappedBucket(f.root, () => linkSync(join(f.root, 'cam-1', 'clip.mp4'), join(f.outside, 'second-name.mp4')))
  await t.rejects(read(late, f.location), /a hard link/)
})

t.test('a folder swapped for a symbolic link between the check and the delete: refused, the file outside stays', async (t) => {
  const f = folders(t)
  const swapped = new SwappedBucket(f.root, () => {
    renameSync(join(f.root, 'cam-1'), join(f.dir, 'moved'))
    symlinkSync(f.outside, join(f.root, 'cam-1'))
  })
  await t.rejects(swapped.remove(f.location), /a folder swapped for a symbolic link/)
  t.equal(readFileSync(join(f.outside, 'clip.mp4'), 'utf8'), SECRET, 'the file outside is not deleted')
  // A deeper folder swapped: opened through the link, found outside by where it really is.
  mkdirSync(join(f.root, 'cam-2', 'day'), { recursive: true })
  writeFileSync(join(f.root, 'cam-2', 'day', 'clip.mp4'), 'clip bytes')
  mkdirSync(join(f.outside, 'day'))
  writeFileSync(join(f.outside, 'day', 'clip.mp4'), SECRET)
  const deeper = new SwappedBucket(f.root, () => {
    renameSync(join(f.root, 'cam-2'), join(f.dir, 'moved-2'))
    symlinkSync(f.outside, join(f.root, 'cam-2'))
  })
  await t.rejects(deeper.remove(pathToFileURL(join(f.root, 'cam-2', 'day', 'clip.mp4')).href), /leads out of this bucket/)
  t.equal(readFileSync(join(f.outside, 'day', 'clip.mp4'), 'utf8'), SECRET, 'nor one a folder further down')
  // Left alone, a clip is deleted, and one already gone is no error.
  const bucket = new FileBucket(pathToFileURL(f.root).href, f.root)
  const plain = pathToFileURL(join(f.dir, 'moved', 'clip.mp4')).href
  const inside = new FileBucket(pathToFileURL(f.dir).href, f.dir)
  await inside.remove(plain)
  t.notOk(existsSync(join(f.dir, 'moved', 'clip.mp4')), 'a clip left alone is deleted')
  await inside.remove(plain)
  await bucket.remove(pathToFileURL(join(f.root, 'nowhere', 'clip.mp4')).href)
})
