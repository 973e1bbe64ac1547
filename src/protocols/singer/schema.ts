/**
 * Stream schemas as Singer targets read them: the shared record schema (built
 * in, or merged with the service's description), with `_sdc_deleted_at`
 * declared only when the stream receives tombstones.
 */
import { isObject } from '../../exact-json.js';
import { ACCOUNT_FIELD, recordJsonSchema, type JsonSchema } from '../../schemas/json-schema.js';
import { hasTombstones, type StreamDefinition } from '../../streams.js';
import { SINGER_DELETED_AT } from './protocol.js';

/** `manyAccounts` (a config with `accounts`): the account field declared, first. */
export function singerSchema(stream: StreamDefinition, tombstones: boolean, base?: JsonSchema, manyAccounts = false): JsonSchema {
  return recordJsonSchema(stream, { deletedAtColumn: hasTombstones(stream, tombstones) ? SINGER_DELETED_AT : undefined, base, accountField: manyAccounts });
}

/** The declared properties of a schema, in order. */
export function propertiesOf(schema: JsonSchema): JsonSchema {
  return isObject(schema.properties) ? schema.properties : {};
}

/** The fields that are always replicated: the primary key and the cursor. */
function automaticFields(stream: StreamDefinition, manyAccounts = false): string[] {
  return [...keyProperties(stream, manyAccounts), ...(stream.cursorField ? [stream.cursorField] : [])];
}

/** The stream's key_properties: [id], or [account, id] with `accounts`. */
export function keyProperties(stream: StreamDefinition, manyAccounts: boolean): string[] {
  return manyAccounts ? [ACCOUNT_FIELD, stream.primaryKey] : [stream.primaryKey];
}

/** Fields replicated whatever the selection says: key, cursor, what deletions are applied by and, with tombstones, the deleted-at column. */
export function alwaysKept(stream: StreamDefinition, tombstones: boolean, manyAccounts = false): Set<string> {
  const kept = new Set(automaticFields(stream, manyAccounts));
  if (hasTombstones(stream, tombstones)) kept.add(SINGER_DELETED_AT);
  // What deletions are applied by: the record pipeline keeps them whatever the selection (tombstones are made of them).
  if (stream.deletionLog) kept.add(stream.deletionLog.objectTypeField).add(stream.deletionLog.objectIdField);
  return kept;
}
