// A second server process on a test's database file, for racing an "at most once" rule across processes.
import { startServer } from './processes.js'

/** A second server process (`dist/main.js`, as `pnpm start` runs it) on the test's database file. */
export async function secondServer(t: { teardown(fn: () => unknown): void }, databaseUrl: string, settings: Record<string, string> = {}): Promise<string> {
  // SCHEDULER=external: its catch-up would run the CHARGE job at the real time, years past the test's clock.
  const env = { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', PASSWORD_HASH_COST: '1024', SCHEDULER: 'external', ...settings }
  return (await startServer(t, env)).base
}
