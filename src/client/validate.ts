/**
 * Contract checks of 2xx bodies. The page envelope is checked field by field
 * in O(1): `data` must be an array but its records are not walked here (the
 * stream reader checks each record's `id` as it passes them on).
 */
import { Me, PageEnvelope } from '../schemas/resources.js';
import { ContractError } from '../errors.js';
import { problemWords, serviceSaid } from './problem.js';
import type { Clean } from './redact.js';
import type { RawPage } from './types.js';

const ENVELOPE_FIELDS = ['data', 'next_cursor', 'has_more', 'sync_watermark'] as const;
/** The envelope without `data`: parsing it never touches the records. */
const EnvelopeHead = PageEnvelope.omit({ data: true });

const EXPECTED: Record<(typeof ENVELOPE_FIELDS)[number], string> = {
  data: 'an array',
  next_cursor: 'a string or null',
  has_more: 'true or false',
  sync_watermark: 'an ISO 8601 date-time with zone',
};

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value}`;
}

function contractError(request: string, what: string, internal: string): ContractError {
  return new ContractError(`${request} returned ${what}.`, { status: 200, internal });
}

/** A list page: all four envelope fields present with the documented types. */
export function checkEnvelope(value: unknown, request: string, clean: Clean): RawPage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw contractError(request, `${kindOf(value)} instead of the page envelope (data, next_cursor, has_more, sync_watermark)`, 'envelope not an object');
  }
  const doc = value as Record<string, unknown>;
  const missing = ENVELOPE_FIELDS.filter((field) => !Object.hasOwn(doc, field));
  if (missing.length > 0) {
    const names = missing.map((f) => `"${f}"`).join(', ');
    const what = `a page without the envelope field${missing.length > 1 ? 's' : ''} ${names} (data, next_cursor, has_more and sync_watermark are always present)`;
    // An error document sent with 200 (a gateway, a proxy): what it says is the cause.
    const said = serviceSaid(problemWords(doc, clean));
    throw new ContractError(`${request} returned ${what}.${said}`, { status: 200, internal: `missing envelope fields: ${missing.join(',')}` });
  }
  if (!Array.isArray(doc.data)) {
    throw contractError(request, `a page whose "data" is ${kindOf(doc.data)}, not ${EXPECTED.data}`, 'envelope field data has the wrong type');
  }
  // Once a page: here zod's compiled fast path pays for itself (the parses done once a run skip it: jitless).
  const head = EnvelopeHead.safeParse(doc);
  if (!head.success) {
    const issue = head.error.issues[0];
    const field = String(issue?.path[0] ?? 'envelope') as (typeof ENVELOPE_FIELDS)[number];
    const got = doc[field];
    const shown = typeof got === 'string' ? `"${clean(got, 60)}"` : kindOf(got);
    throw contractError(
      request,
      `a page whose "${field}" is ${shown}, not ${EXPECTED[field] ?? 'the documented type'}`,
      `envelope field ${field}: ${clean(issue?.message ?? 'invalid', 200)}`,
    );
  }
  return { data: doc.data as readonly unknown[], ...head.data };
}

/** GET /v1/me: account_name, scopes and limits. */
export function checkMe(value: unknown, clean: Clean): Me {
  // Limits are figures for people: a limit written 1000.0 or 1e3 (kept exact by the parse) is the number 1000.
  // Parsed once a run: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const parsed = Me.safeParse(JSON.parse(JSON.stringify(value)) as unknown, { jitless: true });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? 'the document' : `"${issue.path.map(String).join('.')}"`;
  throw contractError(
    'GET /v1/me',
    `account information that does not match the documented shape (${where}: ${clean(issue?.message ?? 'invalid', 200)})`,
    `me: ${clean(parsed.error.message, 500)}`,
  );
}
