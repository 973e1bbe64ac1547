/**
 * `data-read-emulator [options]`: start a local Data-Read API, print one
 * JSON line {url, control_url, control_token, api_key, account_id} on stdout
 * (and into --ready-file, once it serves), and serve until SIGINT/SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { EXTRA_FIELD_TYPES, parseExtraField, type ExtraField } from './extra-fields.js';
import { FAULT_KINDS, type FaultKind, type FaultRule } from './faults.js';
import type { LimitOverrides } from './limits.js';
import { removeReadyFile, writeReadyFile } from './ready-file.js';
import { startEmulator } from './server.js';

export const HELP = `Usage: data-read-emulator [options]

Starts a local emulator of the Data-Read API with one default account and key,
prints one JSON line {"url", "control_url", "control_token", "api_key",
"account_id"} on stdout, and serves until SIGINT or SIGTERM.

To wait for it from a script, give --ready-file: the same line is written
there once the emulator serves (whole, under a temporary name first, then
renamed), and the file is removed when it stops:
  rm -f emulator.json
  data-read-emulator --contacts 500 --ready-file emulator.json > /dev/null &
  until [ -s emulator.json ] || ! kill -0 $! 2>/dev/null; do sleep 0.2; done

Options:
  --port N              port to listen on (default 0: a free port)
  --host H              address to bind (default 127.0.0.1)
  --tls-cert FILE       serve HTTPS with this certificate (PEM; the chain after
                          the leaf); needs --tls-key
  --tls-key FILE        the private key of --tls-cert (PEM)
  --seed S              seed of the data, keys and fault schedule (default 1)
  --contacts N          contacts to seed into the default account (default 0)
  --test-fraction F     share of seeded test-environment contacts (default 0.03)
  --account-name NAME   name of the default account (default "Default account")
  --api-key KEY         key of the default account (<prefix>_live_<secret>)
  --control-token T     bearer token of /_control (default: random)
  --per-minute N        requests per window per key (default 1000)
  --window-ms N         length of the per-minute window in ms (default 60000)
  --per-day N           requests per day window per key (default 100000)
  --day-window-ms N     length of the per-day window in ms (default 86400000)
  --concurrency N       simultaneous requests per key (default 8)
  --latency-ms N        delay added to every API response (default 0)
  --clock-start ISO     virtual time at start (default: now)
  --frozen-clock        virtual time moves only when advanced
  --ready-file FILE     also write the JSON line to FILE once serving (see above)
  --extra-field SPEC    serve a field beyond the API description's on every record
                        of a list, and describe it in /v1/openapi.json; repeatable.
                        SPEC is LIST.NAME:TYPE, TYPE one of ${EXTRA_FIELD_TYPES.join(', ')};
                        add :undescribed to serve it without describing it
                        e.g. contacts.lifetime_value:integer
  --fault SPEC          inject faults; repeatable. SPEC is
                          kind:PROBABILITY or kind:every=N, then optional
                          :times=N  :slow_ms=N  :retry_after=N  :/path,/path
                          :remaining=N  :reset=N (RateLimit-Remaining and -Reset of a
                          429 or 503 instead of the key's own)
                        e.g. 503:0.1   reset:every=5:/v1/contacts   slow:1:slow_ms=3000
                             429:0.05:retry_after=1:remaining=0:reset=1 (a burst limiter)
                        kinds: ${FAULT_KINDS.join(', ')}
  -h, --help            this help
`;

export interface MainIo {
  /** Stop serving when aborted (instead of waiting for a signal). */
  readonly signal?: AbortSignal;
  readonly stdout?: { write(text: string): unknown };
  readonly stderr?: { write(text: string): unknown };
}

interface Parsed {
  port: number;
  host: string;
  seed: number | string;
  contacts: number;
  testFraction: number | undefined;
  accountName: string;
  apiKey: string | undefined;
  controlToken: string | undefined;
  limits: { -readonly [K in keyof LimitOverrides]: LimitOverrides[K] };
  latencyMs: number;
  clockStart: string | undefined;
  frozenClock: boolean;
  faults: FaultRule[];
  extraFields: ExtraField[];
  readyFile: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  help: boolean;
}

/** A mistake in the emulator's command line (an option or its value): told on stderr, exit 2. */
class OptionError extends Error {}

function integer(name: string, v: string, min = 0): number {
  if (!/^\d+$/.test(v) || Number(v) < min) throw new OptionError(`${name} must be an integer >= ${min}`);
  return Number(v);
}

export function parseFault(spec: string): FaultRule {
  const [kind, first, ...rest] = spec.split(':');
  if (kind === undefined || !(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new OptionError(`--fault: unknown kind '${kind ?? ''}' (kinds: ${FAULT_KINDS.join(', ')})`);
  }
  if (first === undefined || first === '') throw new OptionError(`--fault ${spec}: give a probability or every=N`);
  const rule: { -readonly [K in keyof FaultRule]: FaultRule[K] } = { kind: kind as FaultKind };
  if (first.startsWith('every=')) rule.every = integer('--fault every', first.slice(6), 1);
  else {
    const p = Number(first);
    if (!/^(0|1|0?\.\d+|1\.0*)$/.test(first) || !(p >= 0 && p <= 1)) throw new OptionError(`--fault ${spec}: probability must be from 0 to 1`);
    rule.probability = p;
  }
  for (const part of rest) {
    if (part.startsWith('/')) rule.paths = part.split(',').filter((x) => x !== '');
    else if (part.startsWith('paths=')) rule.paths = part.slice(6).split(',').filter((x) => x !== '');
    else if (part.startsWith('times=')) rule.times = integer('--fault times', part.slice(6));
    else if (part.startsWith('slow_ms=')) rule.slowMs = integer('--fault slow_ms', part.slice(8));
    else if (part.startsWith('retry_after=')) rule.retryAfterSeconds = integer('--fault retry_after', part.slice(12));
    else if (part.startsWith('remaining=')) rule.rateLimitRemaining = integer('--fault remaining', part.slice(10));
    else if (part.startsWith('reset=')) rule.rateLimitReset = integer('--fault reset', part.slice(6));
    else throw new OptionError(`--fault ${spec}: cannot read '${part}'`);
  }
  return rule;
}

export function parseArgs(argv: readonly string[]): Parsed {
  const out: Parsed = {
    port: 0, host: '127.0.0.1', seed: 1, contacts: 0, testFraction: undefined, accountName: 'Default account',
    apiKey: undefined, controlToken: undefined, limits: {}, latencyMs: 0, clockStart: undefined, frozenClock: false,
    faults: [], extraFields: [], readyFile: undefined, tlsCert: undefined, tlsKey: undefined, help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-h' || arg === '--help') {
      out.help = true;
      continue;
    }
    if (arg === '--frozen-clock') {
      out.frozenClock = true;
      continue;
    }
    if (!arg.startsWith('--')) throw new OptionError(`unexpected argument '${arg}'`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new OptionError(`${name} needs a value`);
      value = next;
      i++;
    }
    switch (name) {
      case '--port': out.port = integer(name, value); break;
      case '--host': out.host = value; break;
      case '--seed': out.seed = /^\d+$/.test(value) ? Number(value) : value; break;
      case '--contacts': out.contacts = integer(name, value); break;
      case '--test-fraction': {
        const f = Number(value);
        if (!(f >= 0 && f <= 1)) throw new OptionError('--test-fraction must be from 0 to 1');
        out.testFraction = f;
        break;
      }
      case '--account-name': out.accountName = value; break;
      case '--api-key': out.apiKey = value; break;
      case '--control-token': out.controlToken = value; break;
      case '--per-minute': out.limits.perMinute = integer(name, value); break;
      case '--window-ms': out.limits.windowMs = integer(name, value, 1); break;
      case '--per-day': out.limits.perDay = integer(name, value); break;
      case '--day-window-ms': out.limits.dayWindowMs = integer(name, value, 1); break;
      case '--concurrency': out.limits.concurrency = integer(name, value, 1); break;
      case '--latency-ms': out.latencyMs = integer(name, value); break;
      case '--clock-start':
        if (!Number.isFinite(Date.parse(value))) throw new OptionError('--clock-start must be an ISO 8601 instant');
        out.clockStart = value;
        break;
      case '--fault': out.faults.push(parseFault(value)); break;
      case '--extra-field':
        try {
          out.extraFields.push(parseExtraField(value));
        } catch (err) {
          throw new OptionError(err instanceof Error ? err.message : String(err));
        }
        break;
      case '--ready-file':
        if (value === '') throw new OptionError('--ready-file needs a file path');
        out.readyFile = value;
        break;
      case '--tls-cert': out.tlsCert = value; break;
      case '--tls-key': out.tlsKey = value; break;
      default: throw new OptionError(`unknown option ${name} (see --help)`);
    }
  }
  if ((out.tlsCert === undefined) !== (out.tlsKey === undefined)) throw new OptionError('--tls-cert and --tls-key go together');
  return out;
}

/** Run the emulator CLI; resolves with the exit code once stopped. */
export async function main(argv: string[], io: MainIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let args: Parsed;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof OptionError)) throw err;
    stderr.write(`data-read-emulator: ${err.message}\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(HELP);
    return 0;
  }
  let emu;
  try {
    const tls = args.tlsCert === undefined || args.tlsKey === undefined ? undefined : { cert: readFileSync(args.tlsCert), key: readFileSync(args.tlsKey) };
    emu = await startEmulator({
      ...(tls === undefined ? {} : { tls }),
      port: args.port, host: args.host, seed: args.seed, limits: args.limits, faults: args.faults, latencyMs: args.latencyMs,
      frozenClock: args.frozenClock, extraFields: args.extraFields,
      ...(args.controlToken === undefined ? {} : { controlToken: args.controlToken }),
      ...(args.clockStart === undefined ? {} : { clockStart: args.clockStart }),
    });
  } catch (err) {
    stderr.write(`data-read-emulator: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  try {
    const account = emu.control.createAccount({ name: args.accountName });
    const key = emu.control.createKey(account.id, args.apiKey === undefined ? {} : { key: args.apiKey });
    if (args.contacts > 0) {
      emu.control.seed(account.id, { contacts: args.contacts, ...(args.testFraction === undefined ? {} : { testFraction: args.testFraction }) });
    }
    const line = `${JSON.stringify({ url: emu.url, control_url: emu.controlUrl, control_token: emu.controlToken, api_key: key.key, account_id: account.id })}\n`;
    stdout.write(line);
    if (args.readyFile !== undefined) writeReadyFile(args.readyFile, line);
  } catch (err) {
    stderr.write(`data-read-emulator: ${err instanceof Error ? err.message : String(err)}\n`);
    await emu.close();
    return 1;
  }
  const running = emu;
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      io.signal?.removeEventListener('abort', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    if (io.signal?.aborted === true) stop();
    else io.signal?.addEventListener('abort', stop, { once: true });
  });
  if (args.readyFile !== undefined) removeReadyFile(args.readyFile);
  await running.close();
  return 0;
}
