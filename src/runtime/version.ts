/** The package's name and version, read once from package.json. */
import { readFileSync } from 'node:fs';
import { packageFile } from './package-file.js';

interface PackageJson {
  readonly name: string;
  readonly version: string;
}

const pkg = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as PackageJson;

export const VERSION = pkg.version;
export const USER_AGENT = `${pkg.name}/${pkg.version} (node ${process.versions.node})`;
