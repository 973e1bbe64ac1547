// The first thing both executables run: they need Node.js 22 or newer. On an
// older Node this says so in one line on stderr (and how to get a newer one)
// and exits 1, before any of the connector's code is loaded. Plain ES5 and
// CommonJS on purpose, so that every Node.js can parse and run it.
'use strict';

var fs = require('fs');
var path = require('path');

var MIN_MAJOR = 22;

/** A path as the user can type it from the current directory. */
function shown(file) {
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
  var withNode = path.join(__dirname, '..', 'scripts', 'with-node');
  var install = 'install Node.js ' + MIN_MAJOR + ' or newer from https://nodejs.org/ (or: nvm install ' + MIN_MAJOR + ').';
  if (!fs.existsSync(withNode)) return 'Please ' + install;
  return 'Run it through scripts/with-node, which fetches Node 24 once into .cache/: ' + shown(withNode) + ' ' + sameCommand() + '. Or ' + install;
}

/** Exit 1 with one line on stderr unless this Node is new enough. */
module.exports = function requireNode(executable) {
  var version = process.versions.node;
  if (Number(version.split('.')[0]) >= MIN_MAJOR) return;
  process.stderr.write(
    executable + ': Node.js ' + MIN_MAJOR + ' or newer is needed; this is Node.js ' + version + ' (' + process.execPath + '). ' + howToGetIt() + '\n'
  );
  process.exit(1);
};
