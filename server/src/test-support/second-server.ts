// A second server process on a test's database file, for racing an "at most once" rule across processes.
import { processEnv, startServer, type StartedServer } from './processes.js'

/** A second server process (`dist/main.js`, as `pnpm start` runs it) on the test's database; stopped at teardown or by `stop()`. */
export function secondServerProcess(t: { teardown(fn: () => unknown): void }, databaseUrl: string, settings: Record<string, string> = {}): Promise<StartedServer> {
  return startServer(t, processEnv(databaseUrl, settings))
}

/** The same, when a test needs only its base URL. */
export async function secondServer(t: { teardown(fn: () => unknown): void }, databaseUrl: string, settings: Record<string, string> = {}): Promise<string> {
  return (await secondServerProcess(t, databaseUrl, settings)).base
}
