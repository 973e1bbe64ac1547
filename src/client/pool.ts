/**
 * undici's Pool, without the rest of undici. The package index also loads
 * fetch, WebSocket, the HTTP cache, mocks and more: about 110 modules and some
 * 30 ms of start-up that `check` and `read` would pay for nothing. Pool and
 * its request API are files of their own; this wires them exactly as undici's
 * index.js does (`Object.assign(Dispatcher.prototype, api)`). Should a future
 * undici move those files, the package index is loaded instead.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import type { Pool as UndiciPool } from 'undici';

const require = createRequire(import.meta.url);

function loadPool(): typeof UndiciPool {
  try {
    const Pool = require('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
    const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: Record<string, unknown> };
    if (typeof Dispatcher.prototype.request !== 'function') Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);
    if (typeof Pool === 'function' && typeof Pool.prototype.request === 'function') return Pool;
  } catch {
    // an undici with another layout: use its public entry point
  }
  return (require('undici') as typeof import('undici')).Pool;
}

export const Pool: typeof UndiciPool = loadPool();

// undici parses responses with llhttp compiled to WebAssembly. By the second
// response V8 decides one of its functions is hot and recompiles it with
// TurboFan in the background (~35 ms of CPU), and a process that is done (check
// makes two requests) waits at exit for that compile it will never use. The
// baseline (Liftoff) code is fast enough for every read: with tier-up off,
// reading 300k contacts costs the same CPU (bench), and check ends ~30 ms
// sooner. Set after undici has loaded, so its compile cache stays valid.
setFlagsFromString('--wasm-tiering-budget=2000000000');
