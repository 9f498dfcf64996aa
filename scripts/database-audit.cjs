// Loaded with --require (in NODE_OPTIONS, so in every Node process a suite starts) by scripts/test.mjs
// during the SQLite stage: it records which test files open a SQLite database, so the PostgreSQL
// stage can be checked to run every one of them (a new database test cannot be forgotten there).
//
// better-sqlite3 loads its addon the first time a Database is constructed, never on import, so the
// addon's process.dlopen is exactly "this process opened a database". The test file is the first
// process's script whose name ends in .test.*; processes it starts (a server, the CLI) inherit
// CLUB_TEST_FILE through their environment and are counted for it.
'use strict'
const { appendFileSync } = require('node:fs')

/** Whether `filename` is better-sqlite3's own addon (any build of it). */
function isSqliteAddon(filename) {
  return /better_sqlite3\.node$/.test(filename)
}

/** The test file a process runs for: inherited, else its own script when that is a test file. */
function testFileOf(env, argv) {
  if (env.CLUB_TEST_FILE) return env.CLUB_TEST_FILE
  const script = argv[1] ?? ''
  return /\.test\.[cm]?[jt]s$/.test(script) ? script : undefined
}

const log = process.env.CLUB_DATABASE_AUDIT
const testFile = testFileOf(process.env, process.argv)
if (log && testFile) {
  process.env.CLUB_TEST_FILE = testFile
  const dlopen = process.dlopen
  let recorded = false
  process.dlopen = function (module, filename, ...rest) {
    if (!recorded && isSqliteAddon(String(filename))) {
      recorded = true
      appendFileSync(log, `${testFile}\n`)
    }
    return dlopen.call(this, module, filename, ...rest)
  }
}

module.exports = { isSqliteAddon, testFileOf }
