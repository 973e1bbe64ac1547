/**
 * The demo's dashboard: plain SQL over a replica that `replicate` wrote
 * (contacts by temperature and by current stage, conversations won and lost,
 * median first-response time), as an example of what the SQLite file is good
 * for. Not part of the connector: the CLI does not offer it, and the won and
 * lost categories are guesses about values the API does not document.
 * Read-only; safe while `replicate` is writing (WAL): its queries run in one
 * read transaction, so every figure comes from the same commits.
 */
import type { DatabaseSync, SQLOutputValue } from 'node:sqlite';
import { openForRead } from '../src/replica/database.js';

export interface Count {
  /** The value counted (null when the field is null). */
  readonly value: string | null;
  readonly count: number;
}

export interface StageCount extends Count {
  /** Name of the stage when pipeline_stages was replicated and carries one. */
  readonly name: string | null;
}

export interface ReplicaSummary {
  readonly contacts: {
    readonly total: number;
    /** hot, warm, cold (and null), most first. */
    readonly byTemperature: readonly Count[];
    /** current_stage_id, most first. */
    readonly byStage: readonly StageCount[];
  };
  readonly conversations: {
    readonly total: number;
    /** Conversations whose outcome_category is one of the won categories. */
    readonly won: number;
    /** Conversations whose outcome_category is one of the lost categories. */
    readonly lost: number;
    /** Every outcome_category (null: no outcome yet), most first. */
    readonly byOutcome: readonly Count[];
    /** Median of first_response_at - created_at over conversations with both, in seconds; null when none. */
    readonly medianFirstResponseSeconds: number | null;
    /** How many conversations that median is over. */
    readonly respondedCount: number;
  };
  readonly deletions: number;
  /** Latest completed watermark per stream (what the replica is complete up to). */
  readonly watermarks: Readonly<Record<string, string | null>>;
}

/**
 * The API does not document the values of outcome_category. By default
 * `converted` (and `won`) count as won, `not_interested` (and `lost`) as lost:
 * the categories the service sets when a contact reaches a winning or losing
 * stage. Pass your account's own categories to override.
 */
export interface SummaryOptions {
  readonly wonCategories?: readonly string[];
  readonly lostCategories?: readonly string[];
}

export const DEFAULT_WON_CATEGORIES: readonly string[] = ['converted', 'won'];
export const DEFAULT_LOST_CATEGORIES: readonly string[] = ['not_interested', 'lost'];

const num = (v: SQLOutputValue | undefined): number => (v === null || v === undefined ? 0 : Number(v));
const str = (v: SQLOutputValue | undefined): string | null => (v === null || v === undefined ? null : String(v));

function counts(db: DatabaseSync, sql: string): Count[] {
  return db.prepare(sql).all().map((r) => ({ value: str(r.value), count: num(r.count) }));
}

function hasTable(db: DatabaseSync, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * A stage's name: its `name` (else `label`, else `key`), from the typed column
 * when the replica has one (the service's description declared it), else
 * from `_extra` (a replica written with the built-in schemas only).
 */
function stageName(db: DatabaseSync): string {
  const typed = new Set(db.prepare("SELECT name FROM pragma_table_info('pipeline_stages')").all().map((r) => String(r.name)));
  const parts = ['name', 'label', 'key'].map((field) => (typed.has(field) ? `s."${field}"` : `json_extract(s."_extra", '$.${field}')`));
  return `coalesce(${parts.join(', ')})`;
}

export function summarize(db: DatabaseSync, options: SummaryOptions = {}): ReplicaSummary {
  // One snapshot for every query: a run's commit between two of them would make the figures disagree (contacts by
  // stage summing to less than the total). A caller's own transaction is that snapshot already.
  if (db.isTransaction) return summarizeSnapshot(db, options);
  db.exec('BEGIN');
  try {
    return summarizeSnapshot(db, options);
  } finally {
    db.exec('COMMIT');
  }
}

function summarizeSnapshot(db: DatabaseSync, options: SummaryOptions): ReplicaSummary {
  const wonSet = new Set(options.wonCategories ?? DEFAULT_WON_CATEGORIES);
  const lostSet = new Set(options.lostCategories ?? DEFAULT_LOST_CATEGORIES);
  const sumOf = (set: ReadonlySet<string>) => outcomes.reduce((n, o) => n + (o.value !== null && set.has(o.value) ? o.count : 0), 0);
  const stages = hasTable(db, 'pipeline_stages');
  const byStage = db
    .prepare(
      stages
        ? `SELECT c.current_stage_id AS value, count(*) AS count, ${stageName(db)} AS name
           FROM contacts c LEFT JOIN pipeline_stages s ON s.id = c.current_stage_id
           GROUP BY c.current_stage_id ORDER BY count DESC, value`
        : `SELECT current_stage_id AS value, count(*) AS count, NULL AS name FROM contacts GROUP BY current_stage_id ORDER BY count DESC, value`,
    )
    .all()
    .map((r) => ({ value: str(r.value), count: num(r.count), name: str(r.name) }));

  const outcomes = counts(db, 'SELECT outcome_category AS value, count(*) AS count FROM conversations GROUP BY outcome_category ORDER BY count DESC, value');
  const median = db
    .prepare(
      `WITH d AS (
         SELECT (julianday(first_response_at) - julianday(created_at)) * 86400.0 AS s
         FROM conversations
         WHERE first_response_at IS NOT NULL AND created_at IS NOT NULL
           AND julianday(first_response_at) IS NOT NULL AND julianday(created_at) IS NOT NULL
       ),
       o AS (SELECT s, row_number() OVER (ORDER BY s) AS rn, count(*) OVER () AS n FROM d)
       SELECT avg(s) AS median, max(n) AS n FROM o WHERE rn IN ((n + 1) / 2, (n + 2) / 2)`,
    )
    .get();
  const watermarks: Record<string, string | null> = {};
  for (const r of db.prepare('SELECT stream, state FROM _replica_state ORDER BY stream').all()) {
    let wm: string | null = null;
    try {
      const parsed = JSON.parse(String(r.state)) as { sync_watermark?: unknown };
      wm = typeof parsed.sync_watermark === 'string' ? parsed.sync_watermark : null;
    } catch {
      wm = null;
    }
    watermarks[String(r.stream)] = wm;
  }
  const medianSeconds = median?.median === null || median?.median === undefined ? null : Math.round(Number(median.median) * 1000) / 1000;
  return {
    contacts: {
      total: num(db.prepare('SELECT count(*) AS n FROM contacts').get()?.n),
      byTemperature: counts(db, 'SELECT temperature AS value, count(*) AS count FROM contacts GROUP BY temperature ORDER BY count DESC, value'),
      byStage,
    },
    conversations: {
      total: num(db.prepare('SELECT count(*) AS n FROM conversations').get()?.n),
      won: sumOf(wonSet),
      lost: sumOf(lostSet),
      byOutcome: outcomes,
      medianFirstResponseSeconds: medianSeconds,
      respondedCount: num(median?.n),
    },
    deletions: num(db.prepare('SELECT count(*) AS n FROM deletions').get()?.n),
    watermarks,
  };
}

/** The dashboard of the replica at `dbPath` (opened read-only). */
export function replicaSummary(dbPath: string, options: SummaryOptions = {}): ReplicaSummary {
  const db = openForRead(dbPath);
  try {
    return summarize(db, options);
  } finally {
    db.close();
  }
}
