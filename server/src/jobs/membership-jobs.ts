// Runs a membership job by type and answers it as the reference's MembershipJobCapture; the route
// and `club memberships run-job` both come here.
import type { MembershipJobCapture, MembershipJobRequest } from '@club/contract'
import type { Db } from '../db/database.js'
import { requestInstant } from '../instants.js'
import { runChargeJob, type JobDeps } from './membership-charge.js'
import { runGrantJob } from './membership-grant.js'

export async function runMembershipJob(db: Db, request: MembershipJobRequest, deps: JobDeps): Promise<MembershipJobCapture> {
  const date = request.date === undefined ? deps.clock.now() : requestInstant(request.date, 'date')
  const run = request.type === 'GRANT' ? await runGrantJob(db, date, deps) : await runChargeJob(db, date, deps)
  const { users, ...job } = run
  return {
    type: request.type,
    job,
    users: { items: users, _total: users.length, _links: { self: { href: '/apis/v2/admin/membership-jobs' } } },
    date: run.date,
    _links: { self: { href: '/apis/v2/admin/membership-jobs' } }
  }
}
