// The server's own backups at BACKUP_SCHEDULE (node-cron), into BACKUP_DIR, keeping BACKUP_KEEP.
// A failed backup is logged at error and the next one is tried at its time.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import cron from 'node-cron'
import { checkScheduledBackups, takeScheduledBackup } from '../db/backup.js'

export default fp(
  async function backups(app: FastifyInstance) {
    const { BACKUP_SCHEDULE: schedule, BACKUP_DIR: dir, BACKUP_KEEP: keep } = app.config
    if (!schedule) return
    checkScheduledBackups(app.db)
    const task = cron.schedule(
      schedule,
      async () => {
        try {
          const { file, deleted } = await takeScheduledBackup(app.db, { dir, keep, clock: app.clock })
          app.log.info({ file, deleted }, 'scheduled backup written')
        } catch (err) {
          app.log.error({ err }, 'scheduled backup failed')
        }
      },
      // One at a time; and a pending backup alone must not keep a closing process alive.
      { name: 'database backup', noOverlap: true, unref: true }
    )
    app.log.info({ schedule, dir, keep }, 'database backups scheduled')
    app.addHook('onClose', async () => {
      await task.destroy()
    })
  },
  { name: 'backups', dependencies: ['services'] }
)
