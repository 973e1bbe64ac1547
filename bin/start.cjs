// Loads an executable's compiled entry point (ESM, in dist/) and runs its
// main() with the command line; its result is the exit status. Required only
// after bin/node-check.cjs has passed. A checkout that was never built gets
// one line saying how to build instead of a stack trace.
'use strict';

var path = require('path');
var url = require('url');

module.exports = function start(executable, entry) {
  var file = path.join(__dirname, '..', 'dist', 'cli', entry);
  import(url.pathToFileURL(file).href).then(
    function (module) {
      return module.main(process.argv.slice(2)).then(function (code) {
        process.exitCode = code;
      });
    },
    function (err) {
      if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).indexOf(file) !== -1) {
        process.stderr.write(
          executable + ': the compiled code is missing (' + path.relative(process.cwd(), file) + '); build it first: `npm run build` in ' + path.join(__dirname, '..') + '.\n'
        );
      } else {
        process.stderr.write(executable + ': cannot start: ' + (err && err.stack ? err.stack : String(err)) + '\n');
      }
      process.exitCode = 1;
    }
  );
};
