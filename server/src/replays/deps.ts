// What the replay services are handed, made from the settings: one place for the routes and the
// `club replays` commands, so both sign, serve and delete clips the same way.
import type { Config } from '../config.js'
import type { Clock } from '../clock.js'
import { hmacSha256Hex } from '../crypto.js'
import type { ReplayDeps } from './replay.js'
import { ReplayStorage } from './storage.js'

export function replayDeps(config: Config, clock: Clock, tokenKey: string): ReplayDeps {
  return {
    clock,
    settings: {
      defaultSeconds: config.REPLAY_DEFAULT_SECONDS,
      maxSeconds: config.REPLAY_MAX_SECONDS,
      maxAgeSeconds: config.REPLAY_MAX_AGE_SECONDS,
      urlTtlSeconds: config.REPLAY_URL_TTL_SECONDS,
      requestTimeoutSeconds: config.REPLAY_REQUEST_TIMEOUT_SECONDS,
      requirePackage: config.REPLAYS_REQUIRE_PACKAGE,
      matchRequiresPackage: config.MATCH_REQUIRES_PACKAGE,
      pollIntervalSeconds: config.REPLAY_POLL_INTERVAL_SECONDS
    },
    redemption: { clock, clubTimezone: config.CLUB_TIMEZONE, currency: config.CURRENCY, lateCancelHours: config.PACKAGE_LATE_CANCEL_HOURS },
    storage: new ReplayStorage({
      credentialsPath: config.REPLAY_STORAGE_CREDENTIALS,
      // Its own key, derived: a download link proves nothing about a device token and the reverse.
      linkKey: hmacSha256Hex(tokenKey, 'replay-download-links'),
      publicBaseUrl: config.PUBLIC_BASE_URL
    })
  }
}
