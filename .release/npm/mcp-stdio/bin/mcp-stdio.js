#!/usr/bin/env node
// The mcp-stdio command of the npm package: it runs the mcp-stdio binary
// that npm installed beside it. Each platform's binary is a package of its
// own (@mcp-stdio/<platform>-<arch>), listed as an optional dependency
// with "os" and "cpu" fields, so npm installs only the one this machine
// can run. The binary gets this process's arguments, environment and
// standard streams (inherited: protocol bytes never pass through Node);
// SIGINT, SIGTERM and SIGHUP sent here are passed on to it, and this
// process ends as the binary did: with its exit code, or by its signal.
// The binary ends with this process: it is told this process's id
// (MCP_STDIO_PARENT_PID), and `mcp-stdio serve` drains and exits when its
// parent dies, however it dies. And this process ends the binary as a
// SIGTERM would when its own parent dies (npm's exec, whose SIGTERM is not
// passed on here): it looks every second.
'use strict';

const childProcess = require('child_process');
const os = require('os');

const platformPackage = '@mcp-stdio/' + process.platform + '-' + process.arch;
const executable = process.platform === 'win32' ? 'mcp-stdio.exe' : 'mcp-stdio';

function findBinary() {
  try {
    return require.resolve(platformPackage + '/bin/' + executable);
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND') {
      throw err;
    }
  }
  const built = Object.keys(require('../package.json').optionalDependencies || {});
  let why;
  if (built.indexOf(platformPackage) < 0) {
    why = 'there is no mcp-stdio build for ' + process.platform + '/' + process.arch +
      ' (there are: ' + built.map((p) => p.replace('@mcp-stdio/', '')).join(', ') + ').\n' +
      'Build it from source with Go: go install github.com/mcp-stdio/mcp-stdio/cmd/mcp-stdio@latest';
  } else {
    why = 'its binary package, ' + platformPackage + ', is not installed.\n' +
      'npm installs it as an optional dependency: install again without --omit=optional ' +
      '(or --no-optional), or download the archive for this platform from the release.';
  }
  process.stderr.write('mcp-stdio: ' + why + '\n');
  process.exit(1);
}

const binary = findBinary();

// Signals a host or a terminal sends to end the server reach the binary,
// which shuts down in its own way; this process waits for it to exit.
// Listening starts before the binary does, so that no signal meant for it
// ends this process first (listeners run from the event loop, once child
// is set).
const relayed = ['SIGINT', 'SIGTERM', 'SIGHUP'];
if (process.platform === 'win32') {
  relayed.push('SIGBREAK');
}
let child = null;
const relay = (signal) => {
  try {
    child.kill(signal); // false when the binary has exited: its exit event comes next
  } catch (err) {
    // A signal this platform cannot send: nothing to pass on.
  }
};
for (const signal of relayed) {
  process.on(signal, relay);
}

const env = Object.assign({}, process.env, { MCP_STDIO_PARENT_PID: String(process.pid) });
child = childProcess.spawn(binary, process.argv.slice(2), { stdio: 'inherit', windowsHide: true, env: env });

// When the process that started this one is gone (this one has a new
// parent, or the old one no longer exists), the binary is ended as a
// SIGTERM here would end it. The timer does not keep this process alive.
const parent = process.ppid;
const watch = setInterval(() => {
  let alive = process.ppid === parent;
  if (alive) {
    try {
      process.kill(parent, 0);
    } catch (err) {
      alive = err.code === 'EPERM'; // there, but not ours to signal
    }
  }
  if (!alive) {
    clearInterval(watch);
    relay('SIGTERM');
  }
}, 1000);
watch.unref();

child.on('error', (err) => {
  process.stderr.write('mcp-stdio: cannot run ' + binary + ': ' + err.message + '\n');
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (signal === null) {
    process.exit(code);
  }
  // Die of the same signal, as if the binary had been run directly: with
  // no listener left, Node lets it take its default action.
  for (const s of relayed) {
    process.removeListener(s, relay);
  }
  try {
    process.kill(process.pid, signal);
  } catch (err) {
    // Not a signal this platform can send; fall through.
  }
  // Still here (the signal is ignored, or there are no signals): exit as a
  // shell reports a death by signal.
  process.exit(128 + (os.constants.signals[signal] || 0));
});
