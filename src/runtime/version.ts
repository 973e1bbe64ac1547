/** The package's name and version, read once from package.json. */
import { readFileSync } from 'node:fs';

interface PackageJson {
  readonly name: string;
  readonly version: string;
}

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;

export const VERSION = pkg.version;
export const USER_AGENT = `${pkg.name}/${pkg.version} (node ${process.versions.node})`;
