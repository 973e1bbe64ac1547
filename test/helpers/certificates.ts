/**
 * Throw-away certificate authorities for the TLS tests, made with openssl in
 * a temporary folder: a CA, a server certificate it signs for 127.0.0.1 and
 * localhost (the emulator's, or an https:// proxy's), and a second CA that
 * signed nothing the tests serve (the wrong ca_certificate).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './cli.js';

export interface TestCa {
  /** The CA's certificate (PEM): what ca_certificate holds. */
  readonly caCert: string;
  /** A certificate it signed for IP 127.0.0.1 and DNS localhost, and its key (PEM). */
  readonly server: { readonly cert: string; readonly key: string };
  /** A CA that signed nothing served (PEM). */
  readonly otherCaCert: string;
  readonly dir: string;
}

const OPENSSL = '/usr/bin/openssl';
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(dir: string, args: readonly string[]): void {
  execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '3', '-subj', `/CN=${name} (source-data-read tests)`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

/** A fresh CA and a server certificate for 127.0.0.1/localhost. */
export function makeTestCa(): TestCa {
  const dir = tempDir('sdr-pki-');
  makeCa(dir, 'test-ca');
  makeCa(dir, 'other-ca');
  openssl(dir, ['req', ...EC, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl(dir, [
    'x509', '-req', '-in', 'server.csr', '-CA', 'test-ca.crt', '-CAkey', 'test-ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext',
  ]);
  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  return { caCert: read('test-ca.crt'), server: { cert: read('server.crt'), key: read('server.key') }, otherCaCert: read('other-ca.crt'), dir };
}
