/**
 * The TLS context of a client with ca_certificate: Node's default CAs (its
 * bundled store, plus NODE_EXTRA_CA_CERTS and the system store when Node is
 * told to use them) and the certificates given, for the API and for an
 * https:// proxy. Built once per client (about 265 certificates to parse);
 * node:tls is loaded only then.
 */
import { createRequire } from 'node:module';
import type { SecureContext } from 'node:tls';
import { PEM_BLOCK } from '../ca-certificates.js';

const require = createRequire(import.meta.url);

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
    return [...readFileSync(path, 'utf8').matchAll(PEM_BLOCK)].filter((b) => b[1] === 'CERTIFICATE').map((b) => b[0]);
  } catch {
    return [];
  }
}
