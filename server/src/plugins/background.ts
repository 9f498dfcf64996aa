// Work done after the answer has gone out (e.g. a password reset's look-up and mail), so that the
// answer's content and timing cannot depend on it. Tasks run on the next turn of the event loop;
// their failures are logged, never thrown at a caller. Closing the app waits for them.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>()

  constructor(private readonly log: FastifyBaseLogger) {}

  /** Schedules `task`; `name` says in the log which task failed. */
  run(name: string, task: () => Promise<void>): void {
    const done: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(task)
      .catch((err: unknown) => this.log.error({ err, task: name }, 'background task failed'))
      .finally(() => this.running.delete(done))
    this.running.add(done)
  }

  /** Resolves once every task scheduled so far, and any they scheduled, has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    background: BackgroundTasks
  }
}

export default fp(
  async function background(app: FastifyInstance) {
    const tasks = new BackgroundTasks(app.log)
    app.decorate('background', tasks)
    app.addHook('onClose', async () => tasks.idle())
  },
  { name: 'background' }
)
