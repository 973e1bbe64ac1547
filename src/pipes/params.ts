/**
 * Dagster Pipes parameters (protocol 0.1): what DAGSTER_PIPES_CONTEXT and
 * DAGSTER_PIPES_MESSAGES hold is base64 of zlib of JSON. Reading them, and
 * the reverse (for tests and tools that play the orchestrator's part).
 */
import { deflateSync, inflateSync } from 'node:zlib';
import { ConfigError, messageOf } from '../errors.js';

export const CONTEXT_ENV = 'DAGSTER_PIPES_CONTEXT';
export const MESSAGES_ENV = 'DAGSTER_PIPES_MESSAGES';

export type PipesParams = Record<string, unknown>;

/** A problem with what the orchestrator passed; the message names the variable and what to do. */
export class PipesSetupError extends ConfigError {
  constructor(message: string) {
    super(message, { field: 'DAGSTER_PIPES' });
    this.name = 'PipesSetupError';
  }
}

/** base64(zlib(JSON)) of a value. */
export function encodeParam(value: unknown): string {
  return deflateSync(Buffer.from(JSON.stringify(value), 'utf8')).toString('base64');
}

/** The object a variable holds; throws PipesSetupError naming the variable when it is not base64 of zlib of a JSON object. */
export function decodeParam(variable: string, raw: string): PipesParams {
  let value: unknown;
  try {
    value = JSON.parse(inflateSync(Buffer.from(raw.trim(), 'base64')).toString('utf8'));
  } catch (err) {
    throw new PipesSetupError(
      `${variable} is not a Dagster Pipes parameter (base64 of zlib of JSON): ${messageOf(err)}. ` +
        'Let Dagster set it (PipesSubprocessClient, PipesDockerClient, PipesK8sClient), or unset it to run without Pipes.',
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PipesSetupError(`${variable} holds ${Array.isArray(value) ? 'an array' : typeof value}, not the JSON object Dagster Pipes passes.`);
  }
  return value as PipesParams;
}
