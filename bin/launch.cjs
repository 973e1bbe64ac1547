// What both executables run: first the Node.js version check (22.19 or newer:
// the oldest Node undici 8 supports, its declared engines; node:sqlite as the
// replica uses it, unflagged with its busy timeout and transaction state,
// needs 22.16; on an older Node one line on stderr saying so and how to get
// a newer one,
// exit 78 (EX_CONFIG: the machine must change, see src/process/exit-status.ts),
// before any of the connector's code is loaded), then the compiled
// entry point (ESM, in dist/: cli/source.js, cli/tap.js or, for the
// emulator command, emulator/cli.js), whose main() gives the exit status. A
// checkout that was never built gets one line saying how to build (78 too). Plain ES5
// and CommonJS (bin/package.json) on purpose: every Node.js parses it.
'use strict';

var MIN_MAJOR = 22;
var MIN_MINOR = 19;
var MIN = MIN_MAJOR + '.' + MIN_MINOR;

/** A path as the user can type it from the current directory. */
function shown(file) {
  var path = require('path');
  var relative = path.relative(process.cwd(), file);
  if (relative.indexOf('..') === 0) return file;
  return relative.indexOf('/') === -1 ? './' + relative : relative;
}

/** The command line again, when it can be pasted back as it is. */
function sameCommand() {
  var args = process.argv.slice(2);
  for (var i = 0; i < args.length; i++) if (!/^[A-Za-z0-9_.\/=:@%+,-]+$/.test(args[i])) return shown(process.argv[1]) + ' ...';
  return [shown(process.argv[1])].concat(args).join(' ');
}

/** How the user gets a Node that is new enough: scripts/with-node in a checkout, else an install. */
function howToGetIt() {
  var fs = require('fs');
  var path = require('path');
  var withNode = path.join(__dirname, '..', 'scripts', 'with-node');
  var install = 'install Node.js ' + MIN + ' or newer from https://nodejs.org/ (or: nvm install ' + MIN_MAJOR + ').';
  if (!fs.existsSync(withNode)) return 'Please ' + install;
  return 'Run it through scripts/with-node, which fetches Node 24 once into .cache/: ' + shown(withNode) + ' ' + sameCommand() + '. Or ' + install;
}

/** Exit 78 (EX_CONFIG) with one line on stderr unless this Node is new enough. */
function requireNode(executable) {
  var version = process.versions.node;
  var parts = version.split('.');
  var major = Number(parts[0]);
  if (major > MIN_MAJOR || (major === MIN_MAJOR && Number(parts[1]) >= MIN_MINOR)) return;
  process.stderr.write(
    executable + ': Node.js ' + MIN + ' or newer is needed; this is Node.js ' + version + ' (' + process.execPath + '). ' + howToGetIt() + '\n'
  );
  process.exit(78);
}

/** Import dist/<entry> and run its main() with the arguments. */
function start(executable, entry, args) {
  // Relative to this file (import() in CommonJS resolves against the module's own URL).
  import('../dist/' + entry).then(
    function (module) {
      return module.main(args).then(function (code) {
        process.exitCode = code;
      });
    },
    function (err) {
      var path = require('path');
      var file = path.join(__dirname, '..', 'dist', entry);
      if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).indexOf(file) !== -1) {
        process.stderr.write(
          executable + ': the compiled code is missing (' + path.relative(process.cwd(), file) + '); build it first: `npm run build` in ' + path.join(__dirname, '..') + '.\n'
        );
        process.exitCode = 78;
      } else {
        process.stderr.write(executable + ': cannot start: ' + (err && err.stack ? err.stack : String(err)) + '\n');
        process.exitCode = 70;
      }
    }
  );
}

/**
 * Keep V8's compiled code of the modules loaded from here on disk (Node's
 * compile cache, in the system's temporary directory, one per user and Node
 * version): a later run skips compiling them. `check` is ~20 ms sooner (bench).
 * Where the directory cannot be written nothing changes; NODE_DISABLE_COMPILE_CACHE=1
 * turns it off, NODE_COMPILE_CACHE=DIR moves it.
 */
function cacheCompiledCode() {
  var module = require('module');
  if (typeof module.enableCompileCache === 'function') module.enableCompileCache();
}

module.exports = function launch(executable, entry, args) {
  requireNode(executable);
  cacheCompiledCode();
  start(executable, entry, args);
};
