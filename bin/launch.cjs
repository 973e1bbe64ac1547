// What both executables run: first SIGTERM and SIGINT held (until the compiled
// command's own stop handler takes them: holdStops), then the Node.js version check (22.19 or newer:
// the oldest Node undici 8 supports, its declared engines; node:sqlite as the
// replica uses it, unflagged with its busy timeout and transaction state,
// needs 22.16; on an older Node one line on stderr saying so and how to get
// a newer one, the run summary a sync command was asked for (--summary FILE),
// exit 78 (EX_CONFIG: the machine must change, see src/runtime/exit-status.ts),
// before any of the connector's code is loaded), Node 22's warning that
// node:sqlite is experimental silenced, then the compiled
// entry point (ESM, in dist/: cli/source.js or cli/tap.js), whose main()
// gives the exit status. A
// checkout that was never built gets one line saying how to build (78 too). Plain ES5
// and CommonJS (bin/package.json) on purpose: every Node.js parses it.
'use strict';

var MIN_MAJOR = 22;
var MIN_MINOR = 19;
var MIN = MIN_MAJOR + '.' + MIN_MINOR;

/** What a shell takes as one word as it is. */
var PLAIN_WORD = /^[A-Za-z0-9_.\/=:@%+,-]+$/;

/** A path as the user can type it in a shell from the current directory: in single quotes when it holds a space or the like. */
function shown(file) {
  var path = require('path');
  var relative = path.relative(process.cwd(), file);
  var typed = relative.indexOf('..') === 0 ? file : relative.indexOf('/') === -1 ? './' + relative : relative;
  return quoted(typed);
}

/** WORD as a shell takes it whole: as it is, or in single quotes. */
function quoted(word) {
  return PLAIN_WORD.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'";
}

/** The command line again, when it can be pasted back as it is and holds no password (a --db URL's: any URL with an @, whatever its password holds). */
function sameCommand() {
  var args = process.argv.slice(2);
  for (var i = 0; i < args.length; i++) {
    if (!PLAIN_WORD.test(args[i]) || /:\/\/.*@|password=/i.test(args[i])) return shown(process.argv[1]) + ' ...';
  }
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

/**
 * The sync command `args` run and the --summary FILE it asks for (the last
 * one, `--summary FILE` or `--summary=FILE`), as the compiled code reads
 * them; undefined for any other command, or without --summary.
 */
function summaryRequest(entry, args) {
  var command;
  if (entry === 'cli/source.js') {
    var named = firstPositional(args, /^--(config|catalog|state|db|schema|summary)$/);
    if (named === 'read' || named === 'replicate') command = named;
  } else if (entry === 'cli/tap.js') {
    command = 'sync';
    for (var i = 0; i < args.length; i++) if (/^--(about|discover)$/.test(args[i])) command = undefined;
  }
  // Asked for the usage or the version (-h is --help), the compiled code prints it and runs no sync.
  for (var h = 0; h < args.length && command !== undefined; h++) if (/^(--help|-h|--version)$/.test(args[h])) command = undefined;
  if (command === undefined) return undefined;
  var path;
  for (var j = 0; j < args.length; j++) {
    if (args[j] === '--summary' && j + 1 < args.length && args[j + 1].indexOf('--') !== 0) path = args[++j];
    else if (args[j].indexOf('--summary=') === 0) path = args[j].slice('--summary='.length);
  }
  if (path === undefined || path === '') return undefined;
  // read's and the tap's stdout carries their protocol: a summary may not go there, by name or as the file stdout is
  // redirected to (the compiled code refuses it too).
  if (command !== 'replicate' && (/^\/(dev\/stdout|dev\/fd\/1|proc\/self\/fd\/1)$/.test(path) || (!require('tty').isatty(1) && isDescriptor(path, 1)))) return undefined;
  // Nor over a file the command reads or keeps (its config, catalog, state, replica): the compiled code refuses it too.
  for (var k = 0; k < args.length; k++) {
    var flag = /^--(config|catalog|properties|state|db)(=(.*))?$/.exec(args[k]);
    if (flag === null) continue;
    // `--config=FILE` may be the last argument; `--config FILE` takes the next one.
    var value = flag[2] !== undefined ? flag[3] : args[k + 1];
    if (value !== undefined && sameFile(path, value.replace(/^duckdb:/, ''))) return undefined;
  }
  return { command: command, path: path };
}

/**
 * The first argument that is neither an option nor the value of one (`valued`: the options that take the next
 * argument as their value, unless written `--option=value`), as Node's util.parseArgs reads a command line:
 * `source-data-read --config c.json read ...` runs read. Everything after `--` is positional.
 */
function firstPositional(args, valued) {
  for (var i = 0; i < args.length; i++) {
    if (args[i] === '--') return args[i + 1];
    if (valued.test(args[i])) i++;
    else if (args[i].charAt(0) !== '-' || args[i] === '-') return args[i];
  }
  return undefined;
}

/** Whether two paths name one file: the same path, or the same device and inode. */
function sameFile(a, b) {
  var fs = require('fs');
  var path = require('path');
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    var x = fs.statSync(a);
    var y = fs.statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch (gone) {
    return false;
  }
}

/** Whether FILE is what descriptor `fd` of this process is open on (/dev/stderr, the file stderr is redirected to); /dev/null never is. */
function isDescriptor(file, fd) {
  var fs = require('fs');
  try {
    var target = fs.statSync(file);
    var open = fs.fstatSync(fd);
    return target.dev === open.dev && target.ino === open.ino && fs.realpathSync(file) !== '/dev/null';
  } catch (gone) {
    return false;
  }
}

/** The mode (0444) of FILE when it is a regular file its permissions make read-only; undefined otherwise. */
function readOnlyMode(file) {
  var fs = require('fs');
  var stat;
  try {
    stat = fs.statSync(file);
  } catch (gone) {
    return undefined;
  }
  if (!stat.isFile()) return undefined;
  var writable = (stat.mode & 146) !== 0; // 0222
  if (writable) {
    try {
      fs.accessSync(file, fs.constants.W_OK);
    } catch (err) {
      writable = err.code !== 'EACCES';
    }
  }
  if (writable) return undefined;
  return ('0000' + (stat.mode & 4095).toString(8)).slice(-4);
}

/**
 * Write the summary of a run refused before it started (schemas/run-summary.json:
 * failed, config_error, no stream read), as the compiled code would: a
 * temporary file renamed over FILE (over the file it names when FILE is a
 * symbolic link), or FILE written in place where that cannot be done (a
 * pipe, a mount point such as /dev/termination-log); stderr through fd 2.
 */
function writeRefusedSummary(executable, request, code, message) {
  var fs = require('fs');
  var path = require('path');
  var now = new Date().toISOString();
  var version = null;
  try {
    version = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).version;
  } catch (err) {
    // no package.json beside bin/: the version stays unknown
  }
  var text = JSON.stringify({
    summary_version: 1,
    command: request.command,
    status: 'failed',
    exit_code: code,
    failure_type: 'config_error',
    message: message,
    started_at: now,
    finished_at: now,
    duration_seconds: 0,
    connector_version: version === null ? 'unknown' : String(version),
    streams: [],
    requests: 0,
    retries: 0,
    rate_limit_waits: 0,
    rate_limit_wait_seconds: 0
  }) + '\n';
  // stderr itself (--summary /dev/stderr, stderr redirected to a log), or replicate's stdout (a log too): the
  // descriptor adds the summary after what was said there; opening the file by name would empty the log.
  var open = isDescriptor(request.path, 2) ? 2 : isDescriptor(request.path, 1) ? 1 : undefined;
  if (open !== undefined) {
    try {
      fs.writeSync(open, text);
    } catch (err) {
      // the descriptor is gone: there is nowhere left to say it
    }
    return;
  }
  // A summary file the user made read-only is kept, as the compiled code keeps it (its permissions alone: a
  // read-only file system is told below, as any summary that cannot be written).
  var mode = readOnlyMode(request.path);
  if (mode !== undefined) {
    process.stderr.write(executable + ': cannot write the run summary to "' + request.path + '": it is a read-only file (mode ' + mode + ').\n');
    return;
  }
  var temp;
  try {
    var regular = !fs.existsSync(request.path) || fs.statSync(request.path).isFile();
    if (regular) {
      // Through symbolic links (each read relative to its own directory): the file they name is replaced, the link stays.
      var file = request.path;
      for (var links = 0; links < 40; links++) {
        try {
          file = path.resolve(path.dirname(file), fs.readlinkSync(file));
        } catch (notLink) {
          break;
        }
      }
      temp = path.join(path.dirname(file), '.' + path.basename(file) + '.' + process.pid + '.tmp');
      fs.writeFileSync(temp, text, { mode: 420 });
      fs.renameSync(temp, file);
      return;
    }
  } catch (err) {
    try {
      if (temp !== undefined) fs.unlinkSync(temp);
    } catch (gone) {
      // nothing was left
    }
  }
  try {
    var fd;
    if (fs.existsSync(request.path) && fs.statSync(request.path).isFIFO()) {
      // A named pipe: opened plainly it waits forever for a reader that may never come. Without one this is ENXIO.
      var probe = fs.openSync(request.path, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
      try {
        fd = fs.openSync(request.path, 'w');
      } finally {
        fs.closeSync(probe);
      }
    } else {
      fd = fs.openSync(request.path, 'w');
    }
    try {
      fs.writeFileSync(fd, text);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    process.stderr.write(executable + ': cannot write the run summary to "' + request.path + '": ' + (err && err.code ? err.code : String(err)) + '.\n');
  }
}

/** Exit 78 (EX_CONFIG) with one line on stderr, and the run summary asked for, unless this Node is new enough. */
function requireNode(executable, entry, args) {
  var version = process.versions.node;
  var parts = version.split('.');
  var major = Number(parts[0]);
  // The 23 line (no longer maintained) lacks part of what 22.19 has: tls.getCACertificates and node:sqlite's
  // busy timeout before 23.10 (the run fails), node:sqlite's isTransaction in all of it (24.0, 22.16).
  var line23 = major === 23;
  if (!line23 && (major > MIN_MAJOR || (major === MIN_MAJOR && Number(parts[1]) >= MIN_MINOR))) return;
  var message =
    'Node.js ' + MIN + ' or newer is needed' + (line23 ? ', other than the 23 line, which lacks part of what ' + MIN + ' has' : '') +
    '; this is Node.js ' + version + ' (' + process.execPath + '). ' + howToGetIt();
  process.stderr.write(executable + ': ' + message + '\n');
  var request = summaryRequest(entry, args);
  // As the compiled code does: the summary's message is at most 1,500 characters (the whole fits in 4 KiB).
  if (request !== undefined) writeRefusedSummary(executable, request, 78, message.length > 1500 ? message.slice(0, 1499) + '\u2026' : message);
  process.exit(78);
}

/** How to build the checkout: through scripts/with-node where it is there (any Node runs it), from the checkout's root. */
function howToBuild() {
  var fs = require('fs');
  var path = require('path');
  var root = path.join(__dirname, '..');
  var withNode = fs.existsSync(path.join(root, 'scripts', 'with-node'));
  var here = path.resolve(process.cwd()) === path.resolve(root);
  var build = withNode ? 'scripts/with-node npm run build' : 'npm run build';
  return '`' + (here ? build : 'cd ' + quoted(root) + ' && ' + build) + '`' + (withNode ? ' (or `npm run build` where Node.js is 22.20 or newer)' : '');
}

/**
 * Hold SIGTERM and SIGINT while the compiled code loads (about half a second):
 * without a listener a signal then kills the process, with no last words and
 * no run summary (an earlier run's left in its place), and a container's PID 1
 * does not even stop. The returned function hands the first one held to the
 * command's own stop handler, once main() has installed it (cli/run-end.ts
 * does before its first await). A second signal while loading ends the process
 * as it would without the hold.
 */
function holdStops() {
  var signals = ['SIGTERM', 'SIGINT'];
  var held;
  function release() {
    for (var i = 0; i < signals.length; i++) process.off(signals[i], hold);
  }
  function hold(signal) {
    if (held === undefined) {
      held = signal;
      return;
    }
    release();
    process.kill(process.pid, signal);
  }
  for (var i = 0; i < signals.length; i++) process.on(signals[i], hold);
  return function handOver() {
    release();
    if (held !== undefined) process.kill(process.pid, held);
  };
}

/** Import dist/<entry> and run its main() with the arguments; `handOver` gives it the stop signals held meanwhile (holdStops). */
function start(executable, entry, args, handOver) {
  // Relative to this file (import() in CommonJS resolves against the module's own URL).
  import('../dist/' + entry).then(
    function (module) {
      var run = module.main(args);
      handOver();
      return run.then(function (code) {
        process.exitCode = code;
      });
    },
    function (err) {
      var path = require('path');
      var file = path.join(__dirname, '..', 'dist', entry);
      if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).indexOf(file) !== -1) {
        process.stderr.write(executable + ': the compiled code is missing (' + path.relative(process.cwd(), file) + '); build it first: ' + howToBuild() + '.\n');
        process.exitCode = 78;
      } else {
        process.stderr.write(executable + ': cannot start: ' + (err && err.stack ? err.stack : String(err)) + '\n');
        process.exitCode = 70;
      }
      handOver();
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

/**
 * Drop Node 22's warning that node:sqlite is experimental, printed by every
 * run that opens a SQLite replica: the replica uses only what the version
 * check above guarantees, the user can do nothing about it, and it would
 * read as a fault of the run. Every other warning is told as Node tells it.
 * (Node 24 no longer says it. The replica's WAL thread, which says it again,
 * is started without it: src/replica/writer.ts.)
 */
function quietSqliteWarning() {
  var emitWarning = process.emitWarning;
  process.emitWarning = function (warning, type) {
    var kind = type !== null && typeof type === 'object' ? type.type : type;
    if (warning instanceof Error) kind = warning.name;
    var text = warning instanceof Error ? warning.message : String(warning);
    if (kind === 'ExperimentalWarning' && text.indexOf('SQLite is an experimental feature') === 0) return;
    return emitWarning.apply(process, arguments);
  };
}

module.exports = function launch(executable, entry, args) {
  var handOver = holdStops();
  requireNode(executable, entry, args);
  quietSqliteWarning();
  cacheCompiledCode();
  start(executable, entry, args, handOver);
};
