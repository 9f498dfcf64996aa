// pnpm hooks for this workspace.
//
// better-sqlite3 compiles its addon with node-gyp when no prebuilt binary can be downloaded, and
// node-gyp then downloads Node's headers, which fails on a machine that reaches only a package
// mirror. Debian's and NodeSource's `nodejs` packages ship those headers in /usr/include/node, and
// npm on such machines is often set to `nodedir=/usr`, but pnpm (11 and later) passes build scripts
// only a few variables and reads no `nodedir` from .npmrc. So: when the headers of the running
// Node's major version are there and the user chose no nodedir of their own, build scripts get
// `npm_config_nodedir=/usr`. Anywhere else nothing changes.
const { readFileSync } = require('node:fs')

/** The major version of the headers under `<dir>/include/node`, or undefined when there are none. */
function headersMajor(dir) {
  try {
    const header = readFileSync(`${dir}/include/node/node_version.h`, 'utf8')
    const match = /#define NODE_MAJOR_VERSION (\d+)/.exec(header)
    return match ? Number(match[1]) : undefined
  } catch {
    return undefined
  }
}

/** The variables to add to build scripts' environment; pure, so it can be tested. */
function nodedirEnv({ env, nodeVersion, headersMajorAt }) {
  const chosen = Object.keys(env).some((key) => key.toLowerCase() === 'npm_config_nodedir')
  if (chosen) return {}
  const major = Number(nodeVersion.split('.')[0])
  // Headers of another major would build an addon the running Node refuses to load.
  return headersMajorAt('/usr') === major ? { npm_config_nodedir: '/usr' } : {}
}

module.exports = {
  nodedirEnv,
  hooks: {
    updateConfig(config) {
      const extra = nodedirEnv({ env: process.env, nodeVersion: process.versions.node, headersMajorAt: headersMajor })
      if (Object.keys(extra).length === 0) return config
      return { ...config, extraEnv: { ...config.extraEnv, ...extra } }
    }
  }
}
