/**
 * Errors that cross module boundaries. Every error the connector reports is a
 * ConnectorError: it carries the Airbyte failure type and a message a user can
 * act on. Messages never contain the API key (see `redact`).
 */
export type FailureType = 'config_error' | 'transient_error' | 'system_error';

export class ConnectorError extends Error {
  readonly failureType: FailureType;
  /** Detail for logs and TRACE internal_message; never shown as the main message. */
  readonly internal: string | undefined;
  constructor(failureType: FailureType, message: string, options: { internal?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.failureType = failureType;
    this.internal = options.internal;
  }
}

/** Invalid config, catalog or state given by the user. */
export class ConfigError extends ConnectorError {
  constructor(message: string, options: { internal?: string; cause?: unknown } = {}) {
    super('config_error', message, options);
    this.name = 'ConfigError';
  }
}

/** The service broke its own contract (bad envelope, watermark change, cursor loop...). */
export class ContractError extends ConnectorError {
  constructor(message: string, options: { internal?: string; cause?: unknown } = {}) {
    super('system_error', `The Data-Read service broke its API contract: ${message}`, options);
    this.name = 'ContractError';
  }
}

/** Wrap anything thrown into a ConnectorError (unexpected errors are system errors). */
export function toConnectorError(err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ConnectorError('system_error', `Unexpected error in the connector: ${message}`, { cause: err });
}

/** Replace every occurrence of each secret in `text` with `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join('***');
  }
  return out;
}
