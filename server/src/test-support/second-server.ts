// A second server process on a test's database file, for racing an "at most once" rule across processes.
import { processEnv, startServer } from './processes.js'

/** A second server process (`dist/main.js`, as `pnpm start` runs it) on the test's database. */
export async function secondServer(t: { teardown(fn: () => unknown): void }, databaseUrl: string, settings: Record<string, string> = {}): Promise<string> {
  return (await startServer(t, processEnv(databaseUrl, settings))).base
}
