/**
 * The Kubernetes CronJob of docs/orchestrators.md (the YAML block after
 * `<!-- recipe: kubernetes-cronjob -->`) as the `docker run` options that run
 * its container the same way, so that scripts/image-check.sh runs the pod the
 * page shows and the two cannot drift apart:
 *   pod runAsUser/runAsGroup        --user UID:GID
 *   readOnlyRootFilesystem: true    --read-only
 *   allowPrivilegeEscalation: false --security-opt no-new-privileges
 *   capabilities.drop [ALL]         --cap-drop ALL
 *   env                             -e NAME=VALUE
 *   an emptyDir volume              --tmpfs MOUNTPATH
 *   a secret or PVC volume          -v HOSTPATH:MOUNTPATH[:ro] (host folders given by volume name)
 *   terminationMessagePolicy File   -v HOSTFILE:/dev/termination-log (what the kubelet mounts)
 *
 *   node scripts/pod-options.ts NAME=HOSTPATH... [--termination-log HOSTFILE]
 * prints the options one per line, then `--`, the image, and the container's args.
 * Only plain Node and the `yaml` package: it runs from its source (Node strips the types).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const RECIPE_PAGE = 'docs/orchestrators.md';
export const RECIPE_NAME = 'kubernetes-cronjob';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown, what: string): Obj => {
  if (!isObj(v)) throw new Error(`${RECIPE_PAGE}, ${RECIPE_NAME}: ${what} is missing or not a mapping`);
  return v;
};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The text of the ```yaml block right after the recipe's marker. */
export function recipeYaml(page: string): string {
  const marker = `<!-- recipe: ${RECIPE_NAME} -->`;
  const at = page.indexOf(marker);
  if (at === -1) throw new Error(`${RECIPE_PAGE} has no ${marker}`);
  const block = /^```yaml\n([\s\S]*?)^```$/m.exec(page.slice(at + marker.length));
  if (block === null || block.index > 2) throw new Error(`${RECIPE_PAGE}: no \`\`\`yaml block right after ${marker}`);
  return block[1] as string;
}

/** Every document of the YAML, parsed (a syntax error throws). */
export function manifests(yamlText: string): Obj[] {
  return parseAllDocuments(yamlText).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${RECIPE_PAGE}, ${RECIPE_NAME}, document ${i + 1}: ${doc.errors[0]?.message}`);
    return obj(doc.toJS(), `document ${i + 1}`);
  });
}

export function cronJob(docs: readonly Obj[]): Obj {
  const job = docs.find((d) => d.kind === 'CronJob');
  if (job === undefined) throw new Error(`${RECIPE_PAGE}, ${RECIPE_NAME}: no CronJob`);
  return job;
}

/** The pod spec of a CronJob (spec.jobTemplate.spec.template.spec). */
export function podSpec(job: Obj): Obj {
  return obj(obj(obj(obj(obj(job.spec, 'spec').jobTemplate, 'spec.jobTemplate').spec, 'spec.jobTemplate.spec').template, 'the pod template').spec, 'the pod spec');
}

export interface DockerRun {
  readonly options: string[];
  readonly image: string;
  readonly args: string[];
}

/** The docker run of the CronJob's (single) container; `hostPaths` maps a secret or PVC volume's name to a host folder. */
export function dockerRun(job: Obj, hostPaths: Readonly<Record<string, string>>, terminationLog?: string): DockerRun {
  const pod = podSpec(job);
  const containers = list(pod.containers);
  if (containers.length !== 1) throw new Error(`${RECIPE_PAGE}, ${RECIPE_NAME}: the pod should have one container, not ${containers.length}`);
  const container = obj(containers[0], 'the container');
  const podSecurity = isObj(pod.securityContext) ? pod.securityContext : {};
  const security = { ...podSecurity, ...(isObj(container.securityContext) ? container.securityContext : {}) };
  const options: string[] = [];
  if (security.runAsUser !== undefined) options.push('--user', `${String(security.runAsUser)}${security.runAsGroup !== undefined ? `:${String(security.runAsGroup)}` : ''}`);
  if (security.readOnlyRootFilesystem === true) options.push('--read-only');
  if (security.allowPrivilegeEscalation === false) options.push('--security-opt', 'no-new-privileges');
  for (const cap of list(isObj(security.capabilities) ? security.capabilities.drop : undefined)) options.push('--cap-drop', String(cap));
  for (const e of list(container.env)) {
    const v = obj(e, 'an env entry');
    options.push('-e', `${String(v.name)}=${String(v.value ?? '')}`);
  }
  const volumes = new Map(list(pod.volumes).map((v) => [String(obj(v, 'a volume').name), obj(v, 'a volume')]));
  for (const m of list(container.volumeMounts)) {
    const mount = obj(m, 'a volumeMount');
    const name = String(mount.name);
    const volume = volumes.get(name);
    if (volume === undefined) throw new Error(`${RECIPE_PAGE}, ${RECIPE_NAME}: volumeMount ${name} names no volume`);
    const path = String(mount.mountPath);
    if ('emptyDir' in volume) {
      options.push('--tmpfs', path);
    } else {
      const host = hostPaths[name];
      if (host === undefined) throw new Error(`no host folder given for volume ${name} (pass ${name}=HOSTPATH)`);
      const readOnly = mount.readOnly === true || 'secret' in volume || 'configMap' in volume;
      options.push('-v', `${host}:${path}${readOnly ? ':ro' : ''}`);
    }
  }
  if (terminationLog !== undefined) options.push('-v', `${terminationLog}:${String(container.terminationMessagePath ?? '/dev/termination-log')}`);
  return { options, image: String(container.image), args: list(container.args).map(String) };
}

function main(argv: readonly string[]): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const hostPaths: Record<string, string> = {};
  let terminationLog: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--termination-log') terminationLog = argv[++i];
    else if (arg.includes('=')) hostPaths[arg.slice(0, arg.indexOf('='))] = arg.slice(arg.indexOf('=') + 1);
    else throw new Error(`unexpected argument ${arg}: NAME=HOSTPATH or --termination-log FILE`);
  }
  const run = dockerRun(cronJob(manifests(recipeYaml(readFileSync(join(root, RECIPE_PAGE), 'utf8')))), hostPaths, terminationLog);
  process.stdout.write([...run.options, '--', run.image, ...run.args].map((a) => `${a}\n`).join(''));
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`pod-options: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
