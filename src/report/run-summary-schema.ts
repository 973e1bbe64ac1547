/**
 * The shape of a run summary (`--summary FILE`, run-report.ts) as zod
 * schemas: the JSON Schema checked in as schemas/run-summary.json and the
 * types are made from them. Apart from run-report.ts, so that the recorder
 * loads without zod: the command line creates it before anything slow, and
 * a signal at start-up finds it there.
 */
import { z } from 'zod';

const FAILURE_TYPES = ['config_error', 'transient_error', 'system_error'] as const;
const instant = z.iso.datetime({ offset: true });
const count = z.number().int().nonnegative();

const SchemaChangeSchema = z
  .object({
    column: z.string(),
    change: z
      .enum(['added', 'widened', 'retyped', 'left_for_next_run'])
      .describe('added: a new column; widened: its type widened; retyped: its type changed otherwise (a SQLite table rewritten to a newer version\'s layout); left_for_next_run: asked for but not made this run (a reader held the table; a widening a view of PostgreSQL or an index of DuckDB refuses, tried again every run; or values met during the run that do not fit their column), the values kept in _extra until then'),
    from_type: z.string().nullable().describe("The column's SQL type before (null: no column yet)"),
    to_type: z.string().describe("Its SQL type after (left_for_next_run: the type the next run gives it)"),
  })
  .strict();

const StreamSummarySchema = z
  .object({
    name: z.string(),
    status: z.enum(['complete', 'incomplete', 'skipped']).describe('complete: read to the end; incomplete: stopped with its last checkpoint kept; skipped: not read at all'),
    records: count.describe('Records the command emitted (replicate: wrote) for the stream, tombstones included'),
    tombstones: count.describe('Of those, tombstones (deletions_as_tombstones; replicate: rows removed by deletions)'),
    sync_watermark_before: instant.nullable().describe('sync_watermark of the state the run started from'),
    sync_watermark_after: instant.nullable().describe('sync_watermark of the last STATE (checkpoint) of the run'),
    schema_changes: z.array(SchemaChangeSchema).optional().describe("replicate: the changes of the stream table's columns the run made, and those it left for the next run"),
    schema_changes_omitted: count.optional().describe('Changes left out of schema_changes so that the summary fits 4 KiB'),
  })
  .strict();

const AccountSummarySchema = z
  .object({
    name: z.string().describe('The name of the config\'s accounts entry'),
    status: z
      .enum(['succeeded', 'failed', 'incomplete', 'not_tried'])
      .describe(
        'succeeded: every stream read; failed: stopped by its own failure (the others went on); incomplete: the run ended before the account did; ' +
          'not_tried: not started because the accounts before it found the service unreachable (a transient_error; its state is unchanged, the next run reads it)',
      ),
    records: count.describe('Records the command emitted for the account, over every stream'),
    failure_type: z.enum(FAILURE_TYPES).nullable(),
    message: z.string().nullable().describe('Why the account failed, when it did'),
  })
  .strict();

export const RunSummarySchema = z
  .object({
    summary_version: z.literal(1),
    command: z.enum(['read', 'sync', 'replicate']),
    status: z.enum(['succeeded', 'failed', 'interrupted']),
    exit_code: z.number().int().min(0).max(255),
    failure_type: z.enum(FAILURE_TYPES).nullable(),
    message: z.string().nullable().describe('What ended the run, when it did not succeed'),
    started_at: instant,
    finished_at: instant,
    duration_seconds: z.number().nonnegative(),
    connector_version: z.string(),
    streams: z.array(StreamSummarySchema),
    requests: count,
    retries: count,
    rate_limit_waits: count,
    rate_limit_wait_seconds: z.number().nonnegative(),
    accounts: z.array(AccountSummarySchema).optional().describe('With accounts in the config: one entry per account, in the config\'s order'),
  })
  .strict()
  .describe('The summary of one sync command (--summary FILE), written when the command ends, whatever the outcome.');

/** The JSON Schema of a summary file (checked in as schemas/run-summary.json). */
export function runSummaryJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://github.com/source-data-read/source-data-read/blob/main/schemas/run-summary.json',
    title: 'source-data-read run summary',
    ...(z.toJSONSchema(RunSummarySchema, { target: 'draft-07', io: 'output' }) as Record<string, unknown>),
  };
}

export type StreamSummary = z.infer<typeof StreamSummarySchema>;
export type SchemaChangeSummary = z.infer<typeof SchemaChangeSchema>;
export type AccountSummary = z.infer<typeof AccountSummarySchema>;
export type RunSummary = z.infer<typeof RunSummarySchema>;
export type StreamStatus = StreamSummary['status'];
export type RunStatus = RunSummary['status'];
