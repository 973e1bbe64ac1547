/**
 * The TLS context of a client with ca_certificate: Node's default CAs (its
 * bundled store, plus NODE_EXTRA_CA_CERTS and the system store when Node is
 * told to use them) and the certificates given, for the API and for an
 * https:// proxy. Built once per client (about 265 certificates to parse);
 * node:tls is loaded only then.
 */
import { createRequire } from 'node:module';
import type { SecureContext } from 'node:tls';

const require = createRequire(import.meta.url);

/** A TLS context that trusts Node's default CAs and `extra` (PEM certificates). Built once per client. */
export function trustingContext(extra: readonly string[]): SecureContext {
  const tls = require('node:tls') as typeof import('node:tls');
  // getCACertificates: Node 22.15+ (the executables need 22.19).
  return tls.createSecureContext({ ca: [...tls.getCACertificates('default'), ...extra] });
}

