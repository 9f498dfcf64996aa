// Loaded with --require (in NODE_OPTIONS, so in every Node process the suites start) by
// scripts/node24.mjs: better-sqlite3's addon is then the build named by CLUB_BETTER_SQLITE3_BINDING,
// compiled for the running Node, instead of the install's (built for the Node that installed it, which
// another Node refuses to load). Every addon is loaded through process.dlopen, whoever requires it
// (better-sqlite3 itself through `bindings`); any other addon, or without the variable, nothing changes.
'use strict'

/** The file to load for `filename`: the other build for better-sqlite3's own addon, else the same. */
function redirect(filename, binding) {
  if (!binding) return filename
  return /[\\/]better-sqlite3[\\/]build[\\/]Release[\\/]better_sqlite3\.node$/.test(filename) ? binding : filename
}

const binding = process.env.CLUB_BETTER_SQLITE3_BINDING
if (binding) {
  const dlopen = process.dlopen
  process.dlopen = function (module, filename, ...rest) {
    return dlopen.call(this, module, redirect(filename, binding), ...rest)
  }
}

module.exports = { redirect }
