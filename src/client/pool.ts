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

/**
 * For a process that makes a few requests and exits. undici parses responses
 * with llhttp compiled to WebAssembly; by the second response V8 finds one of
 * its functions hot and recompiles it with TurboFan in the background (~35 ms
 * of CPU, ~14 MB of RSS), and a process that is done waits at exit for that
 * compile it will never use: `check` (two requests) ended ~30 ms later.
 * Process-wide, so only short commands ask for it; a long read keeps the
 * optimized parser. Set after undici has loaded, so its compile cache stays valid.
 */
export function keepParserOnBaselineTier(): void {
  setFlagsFromString('--wasm-tiering-budget=2000000000');
}
