/** Reading the JSON files a user passes (config, catalog, state) with errors that say what is wrong. */
import { readFileSync } from 'node:fs';
import { ConfigError, messageOf } from '../errors.js';

/**
 * The text of a file the user named; `what` names it for the user, e.g.
 * "config" or "state". A leading byte order mark (Windows' Notepad and
 * PowerShell 5 save UTF-8 with one) is not part of the text.
 */
export function readTextFile(path: string, what: string): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? err);
    throw new ConfigError(`Cannot read the ${what} file "${path}": ${reason}.`, { field: what });
  }
}

/**
 * Why JSON.parse refused a user's file, without the excerpt of the text that
 * Node quotes for an unexpected token (`..."api_key": drk_live_S"...`): a
 * config file's text holds the API key, and a key not yet parsed cannot be
 * redacted. The position, where Node gives one, stays.
 */
export function jsonSyntaxError(err: unknown): string {
  const message = messageOf(err);
  return message.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/** `what` names the file for the user, e.g. "config" or "state". */
export function readJsonFile(path: string, what: string): unknown {
  const text = readTextFile(path, what);
  if (text.trim() === '') throw new ConfigError(`The ${what} file "${path}" is empty; it must hold a JSON document.`, { field: what });
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(`The ${what} file "${path}" is not valid JSON: ${jsonSyntaxError(err)}.`, { field: what });
  }
}
