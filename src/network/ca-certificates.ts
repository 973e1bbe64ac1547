/**
 * Private certificate authorities (`ca_certificate`): the PEM text checked
 * (one or more certificates, each one Node can read; no private key) and cut
 * into its certificates. Shared by the config (validation) and the client
 * (client/route.ts trusts them). node:crypto is loaded only when one is given.
 */
import { createRequire } from 'node:module';
import { messageOf } from '../errors.js';

const require = createRequire(import.meta.url);

/** ca_certificate cannot be used; the message says why and what to give instead. */
export class CaCertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaCertificateError';
  }
}

/** A PEM block: its label and body. */
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * The certificates of a PEM text, each as its own PEM block. Literal `\n`
 * sequences (a PEM squeezed onto one line for an environment variable) are
 * read as line breaks. Throws CaCertificateError.
 */
export function parseCaCertificates(text: string): string[] {
  const pem = !text.includes('\n') && text.includes('\\n') ? text.replace(/(?:\\r)?\\n/g, '\n') : text;
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  if (blocks.some((b) => (b[1] ?? '').includes('PRIVATE KEY'))) {
    throw new CaCertificateError(
      'ca_certificate holds a private key; give only the certificate of the certificate authority (-----BEGIN CERTIFICATE-----), never a key',
    );
  }
  const certificates = blocks.filter((b) => b[1] === 'CERTIFICATE' || b[1] === 'TRUSTED CERTIFICATE').map((b) => b[0].replaceAll('TRUSTED CERTIFICATE', 'CERTIFICATE'));
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
      const why = messageOf(err);
      throw new CaCertificateError(`ca_certificate: ${which} cannot be read (${why}); copy the PEM text again, whole, with its line breaks`);
    }
  });
  return certificates;
}
