// `club courts signs --area ID --dir FOLDER`: every court sign of an area written to files, to print
// them all at once (the same signs as GET /apis/v2/admin/courts/{id}/sign).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { flags, UsageError, type Command } from '../cli/args.js'
import { courtSign, isSignFormat } from './sign.js'
import { FALLBACK, LANGUAGES, speaks, wordsFor } from '@club/web/court'

export const replayPageCommands: Record<string, Command> = {
  async 'courts signs'({ db, config, args }) {
    const { values } = flags(args, { area: { type: 'string' }, dir: { type: 'string' }, format: { type: 'string' }, lang: { type: 'string' } }, ['area', 'dir'])
    const format = values.format ?? 'pdf'
    if (!isSignFormat(format)) throw new UsageError(`--format is pdf or svg; got ${JSON.stringify(values.format)}`)
    const lang = values.lang ?? FALLBACK
    if (!speaks(lang)) throw new UsageError(`--lang is one of ${Object.keys(LANGUAGES).join(', ')}; got ${JSON.stringify(lang)}`)
    const area = await db.selectFrom('areas').select('id').where('id', '=', values.area!).executeTakeFirst()
    if (!area) throw new UsageError(`--area: no area with id ${JSON.stringify(values.area)}`)
    const courts = await db.selectFrom('courts').select(['name', 'slug']).where('area_id', '=', area.id).orderBy('name').execute()
    const dir = resolve(values.dir!)
    mkdirSync(dir, { recursive: true })
    const written: string[] = []
    for (const court of courts) {
      const path = join(dir, `sign-${court.slug}.${format}`)
      writeFileSync(path, (await courtSign(court, config, wordsFor(lang), format)).body)
      written.push(path)
    }
    return { written }
  }
}
