/**
 * docs/orchestrators.md, every recipe run or checked as written, against the
 * emulator (in process, 127.0.0.1, port 0):
 * - cron: the recipe installs its line (a stand-in `crontab` keeps it in a
 *   file) from a shell whose PATH has Node 24 and the connector; the line's
 *   command then runs as cron runs it (`sh -c`, in HOME, PATH=/usr/bin:/bin,
 *   where this machine's node is older), twice at once: the replica's lock
 *   makes the overlap safe;
 * - systemd: the recipe writes its units (a stand-in `systemctl` records its
 *   calls); ExecStart runs in WorkingDirectory as systemd runs it (no shell,
 *   systemd's PATH);
 * - into PostgreSQL: the systemd recipe's units; ExecStart runs as systemd
 *   runs it with the page's EnvironmentFile (PG* variables) filled in with
 *   the tests' server: the replica equals the service, and the password is
 *   in no command line, log line or summary;
 * - Kubernetes: the YAML parses and says what the page promises (Forbid, the
 *   Secret, the claim, the restricted security context, podFailurePolicy on
 *   the exit statuses, the summary as termination message); its docker options
 *   (scripts/pod-options.ts) are what scripts/image-check runs the image with;
 * - Airflow and Dagster: `python3 -m py_compile`; the DAG's operator with
 *   stand-in Airflow modules retries on 75 only; the command each file names
 *   runs here (Dagster's with the Pipes variables PipesSubprocessClient sets,
 *   its absolute paths set to this machine's, under a PATH without them);
 * - Meltano: meltano.yml's schedule names a job whose plugins exist, and the
 *   recipe runs with a stand-in `meltano` that does what `schedule run` does.
 * Needs `npm run build`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { RECIPE_NAME, cronJob, dockerRun, manifests, podSpec, recipeYaml } from '../../../scripts/pod-options.js';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { parseLines, ROOT, runCli, SOURCE_BIN, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { pipesEnv, readPipes } from '../../helpers/pipes-reader.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { dumpLists, replicaAsDump, LIMITS_OUT_OF_REACH, LISTS } from '../../helpers/emulator-runs.js';
import { freshDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { PostgresStore } from '../../../src/stores/postgres/store.js';
import { parseStoreTarget, type PostgresTarget } from '../../../src/stores/target.js';

const PAGE = 'docs/orchestrators.md';
const page = readFileSync(join(ROOT, PAGE), 'utf8');
const NODE_DIR = dirname(process.execPath);

/** The fenced block of `lang` right after `<!-- recipe: name -->` on this page. */
function block(name: string, lang: string): string {
  return docRecipe(PAGE, name, lang);
}

type Obj = Record<string, unknown>;
const o = (v: unknown): Obj => v as Obj;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ seed: 'orchestrators', limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu?.close();
});

let accounts = 0;
/** The account of the last configIn. */
let lastAccountId = '';
/** A config.json for a new account of the emulator, in `dir`. */
function configIn(dir: string, contacts = 30): string {
  const account = emu.control.createAccount({ name: `orchestrators ${++accounts}` });
  lastAccountId = account.id;
  const { key } = emu.control.createKey(account.id);
  emu.control.seed(account.id, { contacts });
  mkdirSync(dir, { recursive: true });
  return writeJson(dir, 'config.json', { api_key: key, base_url: emu.url, page_size: 50 });
}

/** A folder of executables: source-data-read and tap-data-read of this checkout, plus `extra` scripts; PATH with it and Node 24 first. */
function pathWith(extra: Record<string, string> = {}): string {
  const bin = tempDir('orchestrators-bin-');
  for (const name of ['source-data-read', 'tap-data-read']) symlinkSync(join(ROOT, 'bin', name), join(bin, name));
  for (const [name, text] of Object.entries(extra)) {
    writeFileSync(join(bin, name), text);
    chmodSync(join(bin, name), 0o755);
  }
  return `${bin}:${NODE_DIR}:${process.env.PATH ?? ''}`;
}

/** Run a command without a shell, as systemd and cron's sh leave it (asynchronously: the emulator lives in this process). */
function run(argv: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

const summaryOf = (path: string): Obj => JSON.parse(readFileSync(path, 'utf8')) as Obj;

/** A systemd unit's KEY=VALUE lines (the last of a key wins). */
function systemdUnit(path: string): Map<string, string> {
  const text = readFileSync(path, 'utf8');
  return new Map(text.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** The variables of an EnvironmentFile as systemd reads it: KEY=VALUE lines, comments and blank lines skipped, one pair of quotes taken off. */
function environmentOf(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';') || !trimmed.includes('=')) continue;
    const value = trimmed.slice(trimmed.indexOf('=') + 1).trim();
    out[trimmed.slice(0, trimmed.indexOf('=')).trim()] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return out;
}

/** The variables of a unit's `Environment=` line (space-separated KEY=VALUE, no quotes in these units). */
function environmentLine(unit: Map<string, string>): Record<string, string> {
  const pairs = (unit.get('Environment') ?? '').split(/\s+/).filter((kv) => kv.includes('='));
  return Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

/** PATH as cron gives it to its commands, and systemd (user manager) to its services: neither has the user's Node nor the connector. */
const CRON_PATH = '/usr/bin:/bin';
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The environment a scheduler gives its commands: HOME, its PATH, and the test run's TMPDIR (the files the connector's Node caches go there). */
const schedulerEnv = (home: string, path: string): NodeJS.ProcessEnv => ({ HOME: home, LOGNAME: 'cron', SHELL: '/bin/sh', PATH: path, TMPDIR: process.env.TMPDIR });

describe('docs/orchestrators.md: cron', () => {
  it('installs one line (again: still one); its command, run twice at once as cron would, keeps one replica', async () => {
    const home = tempDir('orchestrators-cron-');
    const crontab = '#!/bin/sh\n# stand-in: the user crontab is $HOME/.crontab\nif [ "$1" = -l ]; then cat "$HOME/.crontab" 2>/dev/null || exit 1; elif [ "$1" = - ]; then cat > "$HOME/.crontab"; else exit 2; fi\n';
    const env = { ...process.env, HOME: home, PATH: pathWith({ crontab }) };
    for (let i = 0; i < 2; i++) {
      const installed = await runShell(docRecipe(PAGE, 'cron'), { cwd: home, env });
      expect(installed.stderr).toBe('');
      expect(installed.code).toBe(0);
    }
    const lines = readFileSync(join(home, '.crontab'), 'utf8').split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    const fields = (lines[0] as string).split(/\s+/);
    expect(fields.slice(0, 5)).toEqual(['*/15', '*', '*', '*', '*']);
    const command = fields.slice(5).join(' ');
    // The folder of the Node the installing shell found (Node 24) first on PATH, the connector run as the program.
    expect(command).toContain(`PATH="${NODE_DIR}:$PATH" "`);
    configIn(join(home, 'data-read'));

    // As cron runs it: PATH=/usr/bin:/bin, where this machine's node (if any) is not the user's.
    const cron = schedulerEnv(home, CRON_PATH);
    const [first, second] = await Promise.all([run(['sh', '-c', command], { cwd: home, env: cron }), run(['sh', '-c', command], { cwd: home, env: cron })]);
    // Both end well: either they did not overlap, or the second found the lock held and exits 75 ("run again later").
    expect([first.code, second.code].sort()).toEqual(expect.arrayContaining([0]));
    for (const code of [first.code, second.code]) expect([0, 75]).toContain(code);
    const log = readFileSync(join(home, 'data-read', 'replicate.log'), 'utf8');
    expect(log).toContain('Replica up to date');
    const again = await run(['sh', '-c', command], { cwd: home, env: cron });
    expect(again.code).toBe(0);
    expect(replicaAsDump(join(home, 'data-read', 'replica.db'))).toStrictEqual(dumpLists(emu.control.dump(lastAccountId)));
    expect(summaryOf(join(home, 'data-read', 'last-run.json'))).toMatchObject({ command: 'replicate', status: 'succeeded', exit_code: 0 });
  });
});

/** This machine's node on cron's PATH, when it is older than the connector needs (Node 20 here), else undefined. */
const oldSystemNode = ((): string | undefined => {
  const found = spawnSync('sh', ['-c', 'command -v node && node -p process.versions.node'], { env: { PATH: CRON_PATH }, encoding: 'utf8' });
  const [path, version = ''] = found.stdout.trim().split('\n');
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return found.status === 0 && (major < 22 || (major === 22 && minor < 19)) ? path : undefined;
})();

describe.skipIf(oldSystemNode === undefined)('docs/orchestrators.md: cron, installed from a shell whose node is too old', () => {
  it('the run exits 78, says why in replicate.log and writes last-run.json (failed, config_error)', async () => {
    const home = tempDir('orchestrators-cron-old-');
    const crontab = '#!/bin/sh\nif [ "$1" = -l ]; then cat "$HOME/.crontab" 2>/dev/null || exit 1; elif [ "$1" = - ]; then cat > "$HOME/.crontab"; else exit 2; fi\n';
    // The connector on PATH, but the machine's old node before Node 24.
    const shellPath = `${pathWith({ crontab }).split(':')[0]}:${CRON_PATH}`;
    const installed = await runShell(docRecipe(PAGE, 'cron'), { cwd: home, env: { ...process.env, HOME: home, PATH: shellPath } });
    expect(installed.code, installed.stderr).toBe(0);
    const line = readFileSync(join(home, '.crontab'), 'utf8').trim();
    expect(line).toContain(`PATH="${dirname(oldSystemNode as string)}:$PATH" "`);
    configIn(join(home, 'data-read'));
    const ran = await run(['sh', '-c', line.split(/\s+/).slice(5).join(' ')], { cwd: home, env: schedulerEnv(home, CRON_PATH) });
    expect(ran.code).toBe(78);
    expect(readFileSync(join(home, 'data-read', 'replicate.log'), 'utf8')).toMatch(/^source-data-read: Node\.js 22\.19 or newer is needed; this is Node\.js \d+\./);
    expect(summaryOf(join(home, 'data-read', 'last-run.json'))).toMatchObject({ command: 'replicate', status: 'failed', exit_code: 78, failure_type: 'config_error' });
  });
});

describe('docs/orchestrators.md: systemd timer', () => {
  it('writes a oneshot service and a persistent timer, enables it, and ExecStart runs as systemd runs it', async () => {
    const home = tempDir('orchestrators-systemd-');
    const systemctl = '#!/bin/sh\n# stand-in: records its arguments\necho "$*" >> "$HOME/systemctl.calls"\n';
    const env = { ...process.env, HOME: home, PATH: pathWith({ systemctl }) };
    const installed = await runShell(docRecipe(PAGE, 'systemd'), { cwd: home, env });
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    expect(readFileSync(join(home, 'systemctl.calls'), 'utf8')).toBe('--user daemon-reload\n--user enable --now data-read-replicate.timer\n');

    const unit = (name: string): Map<string, string> => systemdUnit(join(home, '.config', 'systemd', 'user', name));
    const service = unit('data-read-replicate.service');
    const timer = unit('data-read-replicate.timer');
    expect(service.get('Type')).toBe('oneshot');
    expect(service.get('SuccessExitStatus')).toBe('75');
    expect(timer.get('OnCalendar')).toBe('*:0/15');
    expect(timer.get('Persistent')).toBe('true');
    expect(timer.get('WantedBy')).toBe('timers.target');
    const analyze = spawnSync('systemd-analyze', ['calendar', '*:0/15'], { encoding: 'utf8' });
    if (!analyze.error) expect(analyze.status).toBe(0);

    const cwd = (service.get('WorkingDirectory') as string).replace('%h', home);
    configIn(cwd);
    const execStart = (service.get('ExecStart') as string).split(/\s+/);
    expect(execStart[0]).toMatch(/\/source-data-read$/);
    expect(service.get('Environment')).toBe(`PATH=${NODE_DIR}:/usr/local/bin:/usr/bin:/bin`);
    const ran = await run(execStart, { cwd, env: { ...schedulerEnv(home, SYSTEMD_PATH), ...environmentLine(service) } });
    expect(ran.stderr).toContain('Replica up to date');
    expect(ran.code).toBe(0);
    expect(summaryOf(join(cwd, 'last-run.json'))).toMatchObject({ status: 'succeeded' });
  });
});

/**
 * A folder whose `node` notes its arguments and MALLOC_ARENA_MAX in `log`, then runs this Node: a job made from it
 * shows how it starts Node. The executables' first lines give Node its memory flags only when they are the program
 * run (`node bin/source-data-read` runs without them: memory grows over a long run).
 */
function recordingNode(log: string): string {
  const dir = tempDir('orchestrators-node-');
  writeFileSync(join(dir, 'node'), `#!/bin/sh\necho "$* MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX" >> '${log}'\nexec '${process.execPath}' "$@"\n`);
  chmodSync(join(dir, 'node'), 0o755);
  return dir;
}
const MEMORY_FLAGS = /^--max-semi-space-size=2 --heap-growing-percent=10 \S*source-data-read replicate .* MALLOC_ARENA_MAX=2$/;

describe('docs/orchestrators.md: the jobs start Node with the memory flags of a long run', () => {
  it('cron and systemd: the Node the installing shell found, started by the connector\'s first lines (flags, MALLOC_ARENA_MAX=2)', async () => {
    for (const recipe of ['cron', 'systemd']) {
      const home = tempDir(`orchestrators-flags-${recipe}-`);
      const log = join(home, 'node.log');
      const stand = { crontab: '#!/bin/sh\nif [ "$1" = -l ]; then cat "$HOME/.crontab" 2>/dev/null || exit 1; elif [ "$1" = - ]; then cat > "$HOME/.crontab"; else exit 2; fi\n', systemctl: '#!/bin/sh\n' };
      const [bin = ''] = pathWith(stand).split(':');
      const installed = await runShell(docRecipe(PAGE, recipe), { cwd: home, env: { ...process.env, HOME: home, PATH: `${bin}:${recordingNode(log)}:${CRON_PATH}` } });
      expect(installed.code, installed.stderr).toBe(0);
      const cwd = join(home, 'data-read');
      configIn(cwd);
      if (recipe === 'cron') {
        const line = readFileSync(join(home, '.crontab'), 'utf8').trim();
        const ran = await run(['sh', '-c', line.split(/\s+/).slice(5).join(' ')], { cwd: home, env: schedulerEnv(home, CRON_PATH) });
        expect(ran.code, readFileSync(join(cwd, 'replicate.log'), 'utf8')).toBe(0);
      } else {
        const service = systemdUnit(join(home, '.config', 'systemd', 'user', 'data-read-replicate.service'));
        const ran = await run((service.get('ExecStart') as string).split(/\s+/), { cwd, env: { ...schedulerEnv(home, SYSTEMD_PATH), ...environmentLine(service) } });
        expect(ran.code, ran.stderr).toBe(0);
      }
      expect(readFileSync(log, 'utf8').trim(), recipe).toMatch(MEMORY_FLAGS);
    }
  });
});

describe('docs/orchestrators.md: into PostgreSQL', () => {
  let db: TestDatabase | undefined;
  afterAll(async () => {
    await db?.drop();
  });

  it('the systemd service takes the server from its EnvironmentFile (PG* variables): the replica equals the service, the password in no command line or output', { timeout: 120_000 }, async () => {
    db = await freshDatabase('orchestrators');
    const home = tempDir('orchestrators-postgres-');
    const systemctl = '#!/bin/sh\n# stand-in: records its arguments\necho "$*" >> "$HOME/systemctl.calls"\n';
    const installed = await runShell(docRecipe(PAGE, 'systemd-postgres'), { cwd: home, env: { ...process.env, HOME: home, PATH: pathWith({ systemctl }) } });
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    expect(readFileSync(join(home, 'systemctl.calls'), 'utf8')).toBe('--user daemon-reload\n--user enable --now data-read-postgres.timer\n');
    const units = join(home, '.config', 'systemd', 'user');
    const service = systemdUnit(join(units, 'data-read-postgres.service'));
    const timer = systemdUnit(join(units, 'data-read-postgres.timer'));
    expect(service.get('Type')).toBe('oneshot');
    expect(service.get('SuccessExitStatus')).toBe('75');
    expect(timer.get('OnCalendar')).toBe('*:0/15');
    expect(timer.get('WantedBy')).toBe('timers.target');

    // The page's environment file, with this test server's values (as a user fills it in), where the service reads it.
    const url = new URL(db.url);
    const ours: Record<string, string> = {
      PGHOST: url.hostname,
      PGPORT: url.port,
      PGDATABASE: decodeURIComponent(url.pathname.slice(1)),
      PGUSER: decodeURIComponent(url.username),
      PGPASSWORD: decodeURIComponent(url.password),
      PGSSLMODE: 'disable', // the test server listens on loopback without TLS
    };
    const written = docRecipe(PAGE, 'postgres-env', 'ini')
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => {
        const key = line.slice(0, line.indexOf('='));
        expect(Object.keys(ours), key).toContain(key);
        return `${key}=${ours[key]}`;
      });
    expect(written).toHaveLength(Object.keys(ours).length);
    const cwd = (service.get('WorkingDirectory') as string).replace('%h', home);
    const environmentFile = (service.get('EnvironmentFile') as string).replace('%h', home);
    writeFileSync(environmentFile, `${written.join('\n')}\n`, { mode: 0o600 });
    configIn(cwd);

    // As systemd runs it: no shell, its PATH, the EnvironmentFile's variables added.
    const execStart = (service.get('ExecStart') as string).split(/\s+/);
    expect(execStart.join(' ')).not.toContain(ours.PGPASSWORD);
    const env = { ...schedulerEnv(home, SYSTEMD_PATH), ...environmentLine(service), ...environmentOf(environmentFile) };
    const ran = await run(execStart, { cwd, env });
    expect(ran.stderr).toContain('Replica up to date');
    expect(ran.code, ran.stderr).toBe(0);
    const summary = readFileSync(join(cwd, 'last-run.json'), 'utf8');
    expect(JSON.parse(summary)).toMatchObject({ command: 'replicate', status: 'succeeded' });
    for (const text of [ran.stdout, ran.stderr, summary]) expect(text).not.toContain(ours.PGPASSWORD);
    expect(ran.stderr).toContain(`postgresql://${ours.PGUSER}:***@`);

    const store = await PostgresStore.open(parseStoreTarget('postgresql://', undefined, environmentOf(environmentFile)) as PostgresTarget, { lock: false });
    try {
      const held: Record<string, unknown[]> = {};
      for (const list of LISTS) held[list] = await store.readRecords(list);
      expect(held).toStrictEqual(dumpLists(emu.control.dump(lastAccountId)));
    } finally {
      await store.close();
    }
  });
});

describe('docs/orchestrators.md: Kubernetes CronJob', () => {
  const docs = manifests(recipeYaml(page));
  const job = cronJob(docs);
  const pod = podSpec(job);
  const container = o((pod.containers as unknown[])[0]);
  const volumes = new Map((pod.volumes as Obj[]).map((v) => [v.name as string, v]));
  const mounts = new Map((container.volumeMounts as Obj[]).map((m) => [m.name as string, m]));

  it('is the block the image check reads (scripts/pod-options.ts)', () => {
    expect(RECIPE_NAME).toBe('kubernetes-cronjob');
    expect(recipeYaml(page)).toBe(block('kubernetes-cronjob', 'yaml'));
  });
  const args = container.args as string[];
  const argOf = (flag: string): string => args[args.indexOf(flag) + 1] as string;

  it('forbids overlapping runs and reads the config from a Secret, mounted read-only', () => {
    expect(o(job.spec).concurrencyPolicy).toBe('Forbid');
    const config = [...mounts.values()].find((m) => argOf('--config').startsWith(`${String(m.mountPath)}/`));
    expect(config?.readOnly).toBe(true);
    expect(o(volumes.get(config?.name as string)).secret).toMatchObject({ secretName: 'data-read-config' });
  });

  it('keeps the replica on a PersistentVolumeClaim the YAML also declares', () => {
    expect(args[0]).toBe('replicate');
    const replica = [...mounts.values()].find((m) => argOf('--db').startsWith(`${String(m.mountPath)}/`));
    const claim = o(o(volumes.get(replica?.name as string)).persistentVolumeClaim).claimName;
    expect(docs.some((d) => d.kind === 'PersistentVolumeClaim' && o(d.metadata).name === claim)).toBe(true);
  });

  it('runs as a restricted pod: not root, group 0, read-only root, no capabilities, a memory /tmp, HOME unwritable', () => {
    const podSecurity = o(pod.securityContext);
    const security = o(container.securityContext);
    expect(podSecurity).toMatchObject({ runAsNonRoot: true, runAsUser: 4242, runAsGroup: 0, seccompProfile: { type: 'RuntimeDefault' } });
    expect(security).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(o(volumes.get(o(mounts.get('tmp')).name as string)).emptyDir).toMatchObject({ medium: 'Memory' });
    expect(mounts.get('tmp')?.mountPath).toBe('/tmp');
    expect(container.env).toContainEqual({ name: 'HOME', value: '/nonexistent' });
  });

  it('fails the Job on 78, 2 and 70, retries 75, ignores disruptions; restartPolicy Never, as podFailurePolicy needs', () => {
    const spec = o(o(o(job.spec).jobTemplate).spec);
    expect(o(pod).restartPolicy).toBe('Never');
    expect(spec.backoffLimit).toBeGreaterThan(0);
    const rules = o(spec.podFailurePolicy).rules as Obj[];
    const onCodes = (action: string): unknown[] =>
      rules.filter((r) => r.action === action && r.onExitCodes).flatMap((r) => {
        expect(o(r.onExitCodes)).toMatchObject({ containerName: container.name, operator: 'In' });
        return o(r.onExitCodes).values as unknown[];
      });
    expect(onCodes('FailJob').sort((a, b) => Number(a) - Number(b))).toEqual([2, 70, 78]);
    expect(onCodes('Count')).toEqual([75]);
    expect(rules.some((r) => r.action === 'Ignore' && JSON.stringify(r.onPodConditions).includes('DisruptionTarget'))).toBe(true);
  });

  it('writes the run summary as the termination message, and runs the image the Dockerfile builds', () => {
    expect(argOf('--summary')).toBe('/dev/termination-log');
    expect(container.terminationMessagePolicy).toBe('File');
    const metadata = o(o(parseYaml(readFileSync(join(ROOT, 'metadata.yaml'), 'utf8'))).data);
    expect(container.image).toBe(`${String(metadata.dockerRepository)}:${String(metadata.dockerImageTag)}`);
  });

  it('is the pod scripts/image-check runs under Docker: the same options, taken from this YAML', () => {
    const docker = dockerRun(job, { config: '/host/secret', replica: '/host/claim' }, '/host/termination-log');
    expect(docker.options).toEqual([
      '--user', '4242:0', '--read-only', '--security-opt', 'no-new-privileges', '--cap-drop', 'ALL', '-e', 'HOME=/nonexistent',
      '-v', '/host/secret:/config:ro', '-v', '/host/claim:/data', '--tmpfs', '/tmp', '-v', '/host/termination-log:/dev/termination-log',
    ]);
    expect(docker.args).toEqual(args);
    const runs = readFileSync(join(ROOT, 'scripts', 'image-check', 'runs.sh'), 'utf8');
    expect(runs).toMatch(/^IMAGE_CHECKS=\([^)]*\brestricted\b[^)]*\)/m);
    expect(runs).toContain('"$ROOT/scripts/pod-options.ts" config="$secret" replica="$claim" --termination-log "$log"');
    expect(runs).toContain('run_image restricted-replicate --network host "${opts[@]}" -- "${args[@]}"');
  });
});

/** Names bound to literals at the top of a Python file (ast.literal_eval), as JSON. */
function pythonConstants(file: string, names: readonly string[]): Obj {
  const py = spawnSync(
    'python3',
    ['-c', 'import ast, json, sys\ntree = ast.parse(open(sys.argv[1]).read())\nout = {}\nfor node in tree.body:\n    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in sys.argv[2:]:\n        out[node.targets[0].id] = ast.literal_eval(node.value)\nprint(json.dumps(out, default=sorted))', file, ...names],
    { encoding: 'utf8' },
  );
  expect(py.stderr).toBe('');
  return JSON.parse(py.stdout) as Obj;
}

function compiled(name: string): string {
  const dir = tempDir('orchestrators-py-');
  const file = join(dir, `${name.replace(/-/g, '_')}.py`);
  writeFileSync(file, block(name, 'python'));
  const compile = spawnSync('python3', ['-m', 'py_compile', file], { encoding: 'utf8' });
  expect(compile.stderr).toBe('');
  expect(compile.status).toBe(0);
  return file;
}

/** Stand-ins for the Airflow modules the DAG imports: DockerOperator.execute fails with the exit status in STUB_STATUS. */
const AIRFLOW_STUBS: Record<string, string> = {
  'airflow/__init__.py': 'class DAG:\n    def __init__(self, **kwargs):\n        self.kwargs = kwargs\n    def __enter__(self):\n        return self\n    def __exit__(self, *exc):\n        return False\n',
  'airflow/exceptions.py': 'class AirflowException(Exception):\n    pass\nclass AirflowFailException(AirflowException):\n    pass\n',
  'airflow/providers/__init__.py': '',
  'airflow/providers/docker/__init__.py': '',
  'airflow/providers/docker/exceptions.py':
    'from airflow.exceptions import AirflowException\nclass DockerContainerFailedException(AirflowException):\n    def __init__(self, message, logs=None):\n        super().__init__(message)\n        self.logs = logs\n',
  'airflow/providers/docker/operators/__init__.py': '',
  'airflow/providers/docker/operators/docker.py':
    'import os\nfrom airflow.providers.docker.exceptions import DockerContainerFailedException\nclass DockerOperator:\n    instances = []\n    def __init__(self, **kwargs):\n        self.kwargs = kwargs\n        DockerOperator.instances.append(self)\n    def execute(self, context):\n        status = int(os.environ["STUB_STATUS"])\n        if status != 0:\n            raise DockerContainerFailedException(f"Docker container failed: {{\'StatusCode\': {status}}}", logs=[])\n        return "ok"\n',
  'docker/__init__.py': '',
  'docker/types.py': 'class Mount(dict):\n    def __init__(self, **kwargs):\n        super().__init__(**kwargs)\n',
};

describe('docs/orchestrators.md: Airflow', () => {
  it('compiles; its operator retries on exit 75 only; its command runs', async () => {
    const file = compiled('airflow-dag');
    const stubs = tempDir('orchestrators-airflow-');
    for (const [path, text] of Object.entries(AIRFLOW_STUBS)) {
      mkdirSync(dirname(join(stubs, path)), { recursive: true });
      writeFileSync(join(stubs, path), text);
    }
    const driver =
      'import json, os, runpy, sys\nsys.path.insert(0, sys.argv[1])\nrunpy.run_path(sys.argv[2])\nfrom airflow.providers.docker.operators.docker import DockerOperator\nop = DockerOperator.instances[0]\nout = {"kwargs": {k: v for k, v in op.kwargs.items() if isinstance(v, (str, int, list, bool))}}\nfor status in (0, 75, 78, 70, 2, 1):\n    os.environ["STUB_STATUS"] = str(status)\n    try:\n        op.execute({})\n        out[str(status)] = "ok"\n    except Exception as e:\n        out[str(status)] = type(e).__name__\nprint(json.dumps(out))';
    const py = spawnSync('python3', ['-c', driver, stubs, file], { encoding: 'utf8' });
    expect(py.stderr).toBe('');
    const result = JSON.parse(py.stdout) as { kwargs: Obj } & Record<string, string>;
    // DockerContainerFailedException is retried by Airflow; AirflowFailException fails the task without retry.
    expect([result['0'], result['75'], result['78'], result['70'], result['2'], result['1']]).toEqual([
      'ok', 'DockerContainerFailedException', 'AirflowFailException', 'AirflowFailException', 'AirflowFailException', 'AirflowFailException',
    ]);
    expect(result.kwargs).toMatchObject({ user: '4242:0', mount_tmp_dir: false });
    expect(Number(result.kwargs.retries)).toBeGreaterThan(0);

    const { COMMAND, IMAGE } = pythonConstants(file, ['COMMAND', 'IMAGE']) as { COMMAND: string[]; IMAGE: string };
    expect(result.kwargs.command).toEqual(COMMAND);
    expect(result.kwargs.image).toBe(IMAGE);
    // The container's /config and /data, as folders here.
    const dir = tempDir('orchestrators-airflow-run-');
    configIn(join(dir, 'config'));
    mkdirSync(join(dir, 'data'));
    const argv = COMMAND.map((a) => a.replace(/^\/(config|data)\//, `${dir}/$1/`));
    const ran = await runCli(SOURCE_BIN, argv);
    expect(ran.code).toBe(0);
    expect(summaryOf(join(dir, 'data', 'last-run.json'))).toMatchObject({ command: 'replicate', status: 'succeeded' });
  });
});

describe('docs/orchestrators.md: Dagster', () => {
  it('compiles; its command, launched as PipesSubprocessClient launches it, materializes every asset of the spec', async () => {
    const file = compiled('dagster-assets');
    const constants = pythonConstants(file, ['NODE', 'SOURCE_DATA_READ', 'ARGS', 'STREAMS', 'ASSET_PREFIX']) as { NODE: string; SOURCE_DATA_READ: string; ARGS: string[]; STREAMS: string[]; ASSET_PREFIX: string };
    const { ARGS, STREAMS, ASSET_PREFIX } = constants;
    // Absolute paths the user sets (Dagster does not see their shell's PATH), and the command made of them.
    expect(constants.NODE).toMatch(/^\/.*\/node$/);
    expect(constants.SOURCE_DATA_READ).toMatch(/^\/.*\/source-data-read$/);
    // The connector run as the program, NODE's folder first on PATH: its first lines start that Node with the memory flags.
    expect(block('dagster-assets', 'python')).toContain('command=[SOURCE_DATA_READ, *ARGS]');
    expect(block('dagster-assets', 'python')).toContain('"PATH": os.path.dirname(NODE) + os.pathsep');
    expect(ARGS[0]).toBe('replicate');
    const workdir = tempDir('orchestrators-dagster-');
    configIn(workdir);
    const keys = STREAMS.map((s) => `${ASSET_PREFIX}/${s}`);
    const messages = join(workdir, 'messages');
    // Set as the page says (this machine's Node 24 and the connector), run under a PATH that has neither.
    const command = [SOURCE_BIN, ...ARGS];
    const env = { ...schedulerEnv(workdir, `${NODE_DIR}:${CRON_PATH}`), ...pipesEnv(workdir, keys, { path: messages }) };
    const ran = await run(command, { cwd: workdir, env });
    expect(ran.code, ran.stderr).toBe(0);
    const read = readPipes(readFileSync(messages, 'utf8'));
    expect(read.problems).toEqual([]);
    expect(read.materializations.map((m) => m.assetKey).sort()).toEqual([...keys].sort());
    expect(read.closed?.params).toEqual({});
  });
});

/** A stand-in for `meltano schedule list|run NAME`: reads meltano.yml, runs the job's extractor into its loader as Meltano does. */
const MELTANO = `#!/usr/bin/env node
const fs = require('fs');
const { execFileSync, spawnSync } = require('child_process');
const { parse } = require(process.env.YAML_MODULE);
const project = parse(fs.readFileSync('meltano.yml', 'utf8'));
const [, , group, verb, name] = process.argv;
if (group !== 'schedule') process.exit(2);
if (verb === 'list') { for (const s of project.schedules) console.log(s.name + ' ' + s.interval + ' job ' + s.job); process.exit(0); }
const schedule = project.schedules.find((s) => s.name === name);
const job = project.jobs.find((j) => j.name === schedule.job);
for (const task of job.tasks) {
  const [tapName, targetName] = task.split(' ');
  const tap = project.plugins.extractors.find((p) => p.name === tapName);
  const target = project.plugins.loaders.find((p) => p.name === targetName);
  const config = { ...tap.config };
  for (const s of tap.settings) { const v = process.env['TAP_DATA_READ_' + s.name.toUpperCase()]; if (v !== undefined) config[s.name] = v; }
  fs.writeFileSync('.tap-config.json', JSON.stringify(config));
  const sync = spawnSync(tap.executable, ['--config', '.tap-config.json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  process.stderr.write(sync.stderr);
  if (sync.status !== 0) process.exit(sync.status);
  fs.mkdirSync(target.config.destination_path, { recursive: true });
  for (const line of sync.stdout.split('\\n').filter(Boolean)) {
    const m = JSON.parse(line);
    if (m.type === 'RECORD') fs.appendFileSync(target.config.destination_path + '/' + m.stream + '.jsonl', JSON.stringify(m.record) + '\\n');
  }
}
`;

describe('docs/orchestrators.md: Meltano', () => {
  const project = o(parseYaml(readFileSync(join(ROOT, 'meltano.yml'), 'utf8')));

  it("meltano.yml's schedule runs a job of the tap into the loader, every 15 minutes", () => {
    const schedule = (project.schedules as Obj[]).find((s) => s.name === 'data-read-every-15-minutes');
    expect(schedule?.interval).toBe('*/15 * * * *');
    const job = (project.jobs as Obj[]).find((j) => j.name === schedule?.job);
    expect(job?.tasks).toEqual(['tap-data-read target-jsonl']);
    const plugins = o(project.plugins);
    expect((plugins.extractors as Obj[]).map((p) => p.name)).toContain('tap-data-read');
    expect((plugins.loaders as Obj[]).map((p) => p.name)).toContain('target-jsonl');
  });

  it('the recipe lists the schedule and runs it once', async () => {
    const dir = tempDir('orchestrators-meltano-');
    writeFileSync(join(dir, 'meltano.yml'), readFileSync(join(ROOT, 'meltano.yml')));
    symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
    const config = JSON.parse(readFileSync(configIn(join(dir, 'secrets')), 'utf8')) as { api_key: string; base_url: string };
    const env = {
      ...process.env,
      PATH: pathWith({ meltano: MELTANO }),
      YAML_MODULE: join(ROOT, 'node_modules', 'yaml'),
      TAP_DATA_READ_API_KEY: config.api_key,
      TAP_DATA_READ_BASE_URL: config.base_url,
    };
    const ran = await runShell(docRecipe(PAGE, 'meltano-schedule'), { cwd: dir, env });
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('data-read-every-15-minutes */15 * * * * job data-read-to-jsonl');
    expect(ran.stderr).toContain('Sync finished');
    expect(parseLines(readFileSync(join(dir, 'output', 'contacts.jsonl'), 'utf8')).length).toBeGreaterThan(20);
  });
});
