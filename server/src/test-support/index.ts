// `@club/server/testing`: what the end-to-end suite (test/) takes from the server's test support. Loaded
// as TypeScript source through the tests' loader; nothing under test-support is built into dist/.
export { testConfig, userWithToken, type TestApp } from './app.js'
export { fakeSmtp } from './fake-smtp.js'
export { WebhookReceiver } from './webhook-receiver.js'
export { createTestPostgresDatabase } from './postgres.js'
export { monthlyPlan } from '../memberships/test-fixtures.js'
// The clock of a TestApp: the one its helpers were compiled against (dist's is another class to tsc).
export { ManualClock } from '../clock.js'
export { storeRelease } from './agent-releases.js'
// A box's health report written as its signed poll would (the console's health tests).
export { recordHealth } from '../replay-servers/health.js'
