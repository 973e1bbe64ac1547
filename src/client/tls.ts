/**
 * Private certificate authorities (`ca_certificate`): the PEM text checked
 * (one or more certificates, each one Node can read; no private key), and
 * the TLS context the client then uses for the API and for an https://
 * proxy: Node's default CAs (its bundled store, plus NODE_EXTRA_CA_CERTS and
 * the system store when Node is told to use them) and these certificates.
 * node:crypto and node:tls are loaded only when a certificate is given.
 */
import { createRequire } from 'node:module';
import type { SecureContext } from 'node:tls';

const require = createRequire(import.meta.url);

/** ca_certificate cannot be used; the message says why and what to give instead. */
export class CaCertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaCertificateError';
  }
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * The certificates of a PEM text, each as its own PEM block. Literal `\n`
 * sequences (a PEM squeezed onto one line for an environment variable) are
 * read as line breaks. Throws CaCertificateError.
 */
export function parseCaCertificates(text: string): string[] {
  const pem = !text.includes('\n') && text.includes('\\n') ? text.replace(/(?:\\r)?\\n/g, '\n') : text;
  const blocks = [...pem.matchAll(BLOCK)];
  if (blocks.some((b) => (b[1] ?? '').includes('PRIVATE KEY'))) {
    throw new CaCertificateError(
      'ca_certificate holds a private key; give only the certificate of the certificate authority (-----BEGIN CERTIFICATE-----), never a key',
    );
  }
  const certificates = blocks.filter((b) => b[1] === 'CERTIFICATE' || b[1] === 'TRUSTED CERTIFICATE').map((b) => b[0].replace('TRUSTED CERTIFICATE', 'CERTIFICATE'));
  if (certificates.length === 0) {
    throw new CaCertificateError(
      'ca_certificate must hold one or more PEM certificates, each from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----',
    );
  }
  const { X509Certificate } = require('node:crypto') as typeof import('node:crypto');
  certificates.forEach((cert, i) => {
    try {
      new X509Certificate(cert);
    } catch (err) {
      const which = certificates.length === 1 ? 'its certificate' : `certificate ${i + 1} of ${certificates.length}`;
      const why = err instanceof Error ? err.message : String(err);
      throw new CaCertificateError(`ca_certificate: ${which} cannot be read (${why}); copy the PEM text again, whole, with its line breaks`);
    }
  });
  return certificates;
}

/** A TLS context that trusts Node's default CAs and `extra` (PEM certificates). Built once per client. */
export function trustingContext(extra: readonly string[]): SecureContext {
  const tls = require('node:tls') as typeof import('node:tls');
  const defaults = typeof tls.getCACertificates === 'function' ? tls.getCACertificates('default') : [...tls.rootCertificates, ...extraCaFile()];
  return tls.createSecureContext({ ca: [...defaults, ...extra] });
}

/** NODE_EXTRA_CA_CERTS, for a Node without tls.getCACertificates (before 22.15). */
function extraCaFile(): string[] {
  const path = process.env.NODE_EXTRA_CA_CERTS;
  if (path === undefined || path === '') return [];
  try {
    const { readFileSync } = require('node:fs') as typeof import('node:fs');
    return [...readFileSync(path, 'utf8').matchAll(BLOCK)].filter((b) => b[1] === 'CERTIFICATE').map((b) => b[0]);
  } catch {
    return [];
  }
}
