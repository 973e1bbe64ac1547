/**
 * The connector's per-stream state, as the contract defines it, checked the
 * same way in Airbyte STATE messages and Singer bookmarks:
 *   { sync_watermark?: <ISO instant with zone>, resume?: { cursor, sync_watermark },
 *     account?: { name: <non-empty string>, base_url: <http(s) URL> },
 *     tombstones_through?: { cursor?, sync_watermark } }  (after tombstones: the deletion log's position)
 * or, with accounts in the config, { accounts: { <entry name>: <such a state>, ... }, records_written?: <count> }
 * (records_written: in a STATE that would otherwise repeat the one before it, with records between them).
 * `account` says whose state it is; with `accountRequired` (a state the run
 * wrote itself, as every Airbyte STATE is) it must be there.
 * Written apart from src/engine/state.ts on purpose: a check that reused the
 * code under test would agree with it by construction.
 */
import { isObject } from './summary.js';

/** RFC 3339 date-time (what Singer asks of time_extracted; what the service writes as a watermark). */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function isInstant(value: unknown): boolean {
  return typeof value === 'string' && INSTANT.test(value) && !Number.isNaN(Date.parse(value));
}

/** The problems of a state's `account` (whose state it is). */
function accountProblems(where: string, account: unknown): string[] {
  if (!isObject(account)) return [`${where}: account must be an object {"name", "base_url"}, got ${JSON.stringify(account)}`];
  const problems: string[] = [];
  if (typeof account.name !== 'string' || account.name.length === 0) problems.push(`${where}: account.name must be the account's name, a non-empty string`);
  if (typeof account.base_url !== 'string' || !/^https?:\/\/[^/\s]+/.test(account.base_url)) {
    problems.push(`${where}: account.base_url ${JSON.stringify(account.base_url)} is not the http(s) address the state was read from`);
  }
  return problems;
}

/** The problems of one stream's state (empty when it has the contract's shape); `where` prefixes each. */
export function streamStateProblems(where: string, state: unknown, options: { readonly accountRequired?: boolean } = {}): string[] {
  if (!isObject(state)) return [`${where}: a stream's state must be an object, got ${JSON.stringify(state)}`];
  // Many accounts: {"accounts": {"<entry name>": <a state of one account>, ...}}, nothing beside but records_written.
  if ('accounts' in state) {
    const accounts = state.accounts;
    if (!isObject(accounts)) return [`${where}: accounts must be an object keyed by the config's entry names, got ${JSON.stringify(accounts)}`];
    const beside = Object.keys(state).filter((key) => key !== 'accounts' && key !== 'records_written');
    const problems = beside.length > 0 ? [`${where}: a state of many accounts holds only "accounts" and "records_written", not ${beside.join(', ')}`] : [];
    const written = state.records_written;
    if (written !== undefined && !(Number.isSafeInteger(written) && (written as number) >= 0)) problems.push(`${where}: records_written must be a count of records, got ${JSON.stringify(written)}`);
    for (const [name, inner] of Object.entries(accounts)) {
      if (isObject(inner) && 'accounts' in inner) problems.push(`${where}.accounts.${name}: holds accounts again`);
      else problems.push(...streamStateProblems(`${where}.accounts.${name}`, inner, options));
    }
    return problems;
  }
  const problems: string[] = [];
  if ('sync_watermark' in state && !isInstant(state.sync_watermark)) {
    problems.push(`${where}: sync_watermark ${JSON.stringify(state.sync_watermark)} is not an ISO 8601 instant with zone`);
  }
  if ('resume' in state) {
    const resume = state.resume;
    if (!isObject(resume)) problems.push(`${where}: resume must be an object {"cursor", "sync_watermark"}, got ${JSON.stringify(resume)}`);
    else {
      if (typeof resume.cursor !== 'string' || resume.cursor.length === 0) problems.push(`${where}: resume.cursor must be a non-empty string`);
      if (!isInstant(resume.sync_watermark)) {
        problems.push(`${where}: resume.sync_watermark ${JSON.stringify(resume.sync_watermark)} is not an ISO 8601 instant with zone`);
      }
    }
  }
  if ('tombstones_through' in state) {
    const through = state.tombstones_through;
    if (!isObject(through)) problems.push(`${where}: tombstones_through must be an object {"cursor"?, "sync_watermark"}, got ${JSON.stringify(through)}`);
    else {
      if ('cursor' in through && (typeof through.cursor !== 'string' || through.cursor.length === 0)) problems.push(`${where}: tombstones_through.cursor must be a non-empty string`);
      if (!isInstant(through.sync_watermark)) {
        problems.push(`${where}: tombstones_through.sync_watermark ${JSON.stringify(through.sync_watermark)} is not an ISO 8601 instant with zone`);
      }
    }
  }
  if ('account' in state) problems.push(...accountProblems(where, state.account));
  else if (options.accountRequired === true) problems.push(`${where}: no account (every state the connector writes says whose it is)`);
  return problems;
}
