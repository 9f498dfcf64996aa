// Segments an export is reading: cleanup must not delete them under it.
export class SegmentLeases {
  private readonly held = new Map<string, number>()

  hold(paths: readonly string[]): () => void {
    for (const p of paths) this.held.set(p, (this.held.get(p) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      for (const p of paths) {
        const n = (this.held.get(p) ?? 1) - 1
        if (n <= 0) this.held.delete(p)
        else this.held.set(p, n)
      }
    }
  }

  paths(): Set<string> {
    return new Set(this.held.keys())
  }
}
