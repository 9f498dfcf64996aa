// Every migration, listed by hand (ESM has no folder scan). Shipped migrations are frozen.
import type { Migration } from 'kysely'
import * as m0001 from './0001_foundation.js'
import * as m0002 from './0002_venue.js'
import * as m0003 from './0003_templates.js'
import * as m0004 from './0004_replay_servers.js'
import * as m0005 from './0005_identity.js'
import * as m0006 from './0006_token_lifetimes.js'
import * as m0007 from './0007_firebase_verification_unique.js'
import * as m0008 from './0008_replay_server_status_changes.js'
import * as m0009 from './0009_template_ref_counts.js'
import * as m0010 from './0010_memberships.js'
import * as m0011 from './0011_enrollments.js'
import * as m0012 from './0012_pauses.js'
import * as m0013 from './0013_packages.js'
import * as m0014 from './0014_scheduled_jobs.js'
import * as m0015 from './0015_replays.js'
import * as m0016 from './0016_replay_guests.js'
import * as m0017 from './0017_agent_releases.js'
import * as m0018 from './0018_replay_server_claims.js'
import * as m0019 from './0019_replay_server_poll_address.js'
import * as m0020 from './0020_replay_server_key_adoption.js'
import * as m0021 from './0021_replay_guest_court.js'
import * as m0022 from './0022_footage_access.js'
import * as m0023 from './0023_replay_takedown.js'
import * as m0024 from './0024_do_not_film.js'
import * as m0025 from './0025_redemption_give_backs.js'
import * as m0026 from './0026_subscription_changes.js'
import * as m0027 from './0027_enrollment_invitation_links.js'
import * as m0028 from './0028_events.js'
import * as m0029 from './0029_webhook_endpoints.js'
import * as m0030 from './0030_table_changes.js'
import * as m0031 from './0031_template_list_order.js'
import * as m0032 from './0032_events_numbered_at_commit.js'
import * as m0033 from './0033_footage_takedowns.js'
import * as m0034 from './0034_redemption_delivered.js'
import * as m0035 from './0035_events_without_url_passwords.js'
import * as m0036 from './0036_poll_address_since.js'
import * as m0037 from './0037_replay_server_health.js'
import * as m0038 from './0038_agent_rollouts.js'
import * as m0039 from './0039_matches.js'

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_venue': m0002,
  '0003_templates': m0003,
  '0004_replay_servers': m0004,
  '0005_identity': m0005,
  '0006_token_lifetimes': m0006,
  '0007_firebase_verification_unique': m0007,
  '0008_replay_server_status_changes': m0008,
  '0009_template_ref_counts': m0009,
  '0010_memberships': m0010,
  '0011_enrollments': m0011,
  '0012_pauses': m0012,
  '0013_packages': m0013,
  '0014_scheduled_jobs': m0014,
  '0015_replays': m0015,
  '0016_replay_guests': m0016,
  '0017_agent_releases': m0017,
  '0018_replay_server_claims': m0018,
  '0019_replay_server_poll_address': m0019,
  '0020_replay_server_key_adoption': m0020,
  '0021_replay_guest_court': m0021,
  '0022_footage_access': m0022,
  '0023_replay_takedown': m0023,
  '0024_do_not_film': m0024,
  '0025_redemption_give_backs': m0025,
  '0026_subscription_changes': m0026,
  '0027_enrollment_invitation_links': m0027,
  '0028_events': m0028,
  '0029_webhook_endpoints': m0029,
  '0030_table_changes': m0030,
  '0031_template_list_order': m0031,
  '0032_events_numbered_at_commit': m0032,
  '0033_footage_takedowns': m0033,
  '0034_redemption_delivered': m0034,
  '0035_events_without_url_passwords': m0035,
  '0036_poll_address_since': m0036,
  '0037_replay_server_health': m0037,
  '0038_agent_rollouts': m0038,
  '0039_matches': m0039
}
