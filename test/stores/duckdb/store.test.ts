/**
 * The DuckDB store on real files: the suite every store passes, DuckDB's
 * types (HUGEINT, DOUBLE with the exact text kept), its file lock between
 * two processes (75 at once), and a writer killed at random moments
 * leaving whole checkpoints only. The processes run the built store
 * (`dist/`: `npm test` builds it first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rawNumber } from '../../../src/exact-json.js';
import { loadDuckdbDriver } from '../../../src/stores/duckdb/connection.js';
import { DuckdbStore } from '../../../src/stores/duckdb/store.js';
import { DUCKDB_DIALECT } from '../../../src/stores/duckdb/tables.js';
import { DuckdbSql, csvBytes } from '../../../src/stores/duckdb/writer.js';
import type { StoreLayout } from '../../../src/stores/columns.js';
import { encodeRow, type Cell } from '../../../src/stores/values.js';
import { parseStoreTarget, type DuckdbTarget } from '../../../src/stores/target.js';
import { ROOT, tempDir } from '../../helpers/cli.js';
import { checkpoint, connectorFailure, contact } from '../records.js';
import { storeSuite, type SuiteStore } from '../store-suite.js';

let dir: string;
beforeAll(() => {
  dir = tempDir('sdr-duckdb-');
});
afterAll(() => {
  // the run's temporary folder goes at the end of the run
});

function target(name: string, schema?: string): DuckdbTarget {
  const t = parseStoreTarget(`duckdb:${join(dir, `${name}.duckdb`)}`, schema, {});
  if (t.kind !== 'duckdb') throw new Error('not duckdb');
  return t;
}

async function rows(store: DuckdbStore, sql: string): Promise<Record<string, unknown>[]> {
  const reader = await store.session.runAndReadAll(sql.replaceAll('{schema}', `"${store.target.schema}"`));
  return reader.getRowObjectsJS() as Record<string, unknown>[];
}


storeSuite({
  open: (name, options = {}) => DuckdbStore.open(target(name), options),
  rows: (store: SuiteStore, sql) => rows(store as DuckdbStore, sql),
  types: { int64: 'BIGINT', number: 'DOUBLE', text: 'VARCHAR', boolean: 'BOOLEAN', timestamp: 'TIMESTAMPTZ' },
});

describe('what DuckDB holds', () => {
  it('typed tables in the schema (main by default, or --schema), key id NOT NULL without a constraint', async () => {
    const store = await DuckdbStore.open(target('types', 'raw'));
    try {
      const columns = await rows(store, "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'raw' AND table_name = 'contacts'");
      expect(Object.fromEntries(columns.map((c) => [c.column_name, c.data_type]))).toMatchObject({
        id: 'VARCHAR',
        updated_at: 'TIMESTAMP WITH TIME ZONE',
        qualification_score: 'BIGINT',
        do_not_contact: 'BOOLEAN',
        _extra: 'JSON',
        _synced_at: 'TIMESTAMP WITH TIME ZONE',
      });
      const keys = await rows(store, "SELECT constraint_type AS t, constraint_column_names AS c FROM duckdb_constraints() WHERE schema_name = 'raw' AND table_name = 'contacts' AND list_contains(constraint_column_names, 'id')");
      expect(keys).toEqual([{ t: 'NOT NULL', c: ['id'] }]);
    } finally {
      await store.close();
    }
  });

  it('instants keep their microseconds whatever the session TimeZone (DuckDB reads the service\'s form with its Z, others as microseconds in UTC)', async () => {
    const store = await DuckdbStore.open(target('zones'));
    try {
      await store.session.run("SET TimeZone = 'America/Sao_Paulo'");
      // The service's form (appended as its text), at the calendar's ends and a leap day, and another form (its microseconds).
      const iso = ['2025-06-01T12:34:56.789Z', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2024-02-29T23:59:59.999Z'];
      await store.commit(checkpoint('contacts', [...iso.map((t, i) => contact(`c${i + 1}`, 1, { updated_at: t })), contact('c5', 2, { updated_at: '2025-06-01T12:34:56.789123+02:00' })], 2));
      const got = await rows(store, 'SELECT id, epoch_us(updated_at) AS us FROM {schema}.contacts ORDER BY id');
      expect(got).toEqual([
        ...iso.map((t, i) => ({ id: `c${i + 1}`, us: BigInt(Date.parse(t)) * 1000n })),
        { id: 'c5', us: BigInt(Date.parse('2025-06-01T10:34:56.789Z')) * 1000n + 123n },
      ]);
      expect(await store.readRecords('contacts')).toMatchObject([...iso.map((t, i) => ({ id: `c${i + 1}`, updated_at: t })), { id: 'c5', updated_at: '2025-06-01T12:34:56.789123+02:00' }]);
    } finally {
      await store.close();
    }
  });

  it('an integer beyond 64 bits widens BIGINT to HUGEINT exactly; a decimal then to DOUBLE, the exact texts kept in _extra', async () => {
    const big = contact('c2', 2, { qualification_score: rawNumber('123456789012345678901234567890') });
    let store = await DuckdbStore.open(target('widen'));
    await store.commit(checkpoint('contacts', [contact('c1', 1), big], 2));
    await store.close();
    store = await DuckdbStore.open(target('widen'));
    try {
      expect(store.changes).toEqual(['contacts.qualification_score: BIGINT -> HUGEINT']);
      expect(await rows(store, 'SELECT CAST(qualification_score AS VARCHAR) AS q, _extra FROM {schema}.contacts ORDER BY id')).toEqual([
        { q: '42', _extra: null },
        { q: '123456789012345678901234567890', _extra: null },
      ]);
      await store.commit(checkpoint('contacts', [contact('c3', 3, { qualification_score: rawNumber('0.10000000000000000001') })], 3));
    } finally {
      await store.close();
    }
    store = await DuckdbStore.open(target('widen'));
    try {
      expect(store.changes).toEqual(['contacts.qualification_score: HUGEINT -> DOUBLE']);
      const back = await store.readRecords('contacts');
      expect(back.map((r) => r.qualification_score)).toEqual([42, rawNumber('123456789012345678901234567890'), rawNumber('0.10000000000000000001')]);
      expect(await rows(store, 'SELECT qualification_score AS q FROM {schema}.contacts ORDER BY id')).toEqual([{ q: 42 }, { q: 1.2345678901234568e29 }, { q: 0.1 }]);
    } finally {
      await store.close();
    }
  });

  it("a widening an index someone made refuses is left undone with a WARN naming the index, the rest applied; once it is gone the column widens", async () => {
    const big = contact('c2', 2, { qualification_score: rawNumber('123456789012345678901234567890'), job_title: { title: 'Buyer' }, lifetime_value: 7 });
    let store = await DuckdbStore.open(target('indexed'));
    await store.commit(checkpoint('contacts', [contact('c1', 1), big], 2));
    // A dashboard's user indexes a column (DuckDB then changes no column's type in the table).
    await store.session.run(`CREATE INDEX by_stage ON "${store.target.schema}".contacts (current_stage_id)`);
    await store.close();
    const bigger = contact('c3', 3, { qualification_score: rawNumber('99999999999999999999999') });
    store = await DuckdbStore.open(target('indexed'));
    try {
      expect(store.changes).toEqual(['contacts.lifetime_value: new column (BIGINT)']);
      const warns = store.notes.filter((n) => n.level === 'WARN').map((n) => n.message);
      expect(warns).toHaveLength(2);
      expect(warns[0]).toContain('contacts.job_title: VARCHAR -> JSON cannot be made');
      expect(warns[1]).toContain('contacts.qualification_score: BIGINT -> HUGEINT cannot be made');
      for (const warn of warns) expect(warn).toContain('index "by_stage" on contacts');
      expect(store.schemaChanges()).toEqual([
        { stream: 'contacts', column: 'lifetime_value', change: 'added', from: null, to: 'BIGINT' },
        { stream: 'contacts', column: 'job_title', change: 'left_for_next_run', from: 'VARCHAR', to: 'JSON' },
        { stream: 'contacts', column: 'qualification_score', change: 'left_for_next_run', from: 'BIGINT', to: 'HUGEINT' },
      ]);
      // The run writes; what its columns cannot hold is kept whole in _extra, and every record reads back as sent.
      await store.commit(checkpoint('contacts', [bigger], 3));
      expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), big, bigger]);
      await store.session.run(`DROP INDEX "${store.target.schema}".by_stage`);
    } finally {
      await store.close();
    }
    store = await DuckdbStore.open(target('indexed'));
    try {
      expect(store.changes).toEqual(['contacts.job_title: VARCHAR -> JSON', 'contacts.qualification_score: BIGINT -> HUGEINT']);
      expect(await rows(store, 'SELECT CAST(qualification_score AS VARCHAR) AS q FROM {schema}.contacts ORDER BY id')).toEqual([
        { q: '42' },
        { q: '123456789012345678901234567890' },
        { q: '99999999999999999999999' },
      ]);
      expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), big, bigger]);
    } finally {
      await store.close();
    }
  });
});

describe('the copy of the WAL into the file at close', () => {
  it("keeps the run's one thread when the WAL is small (a run with little to write), and leaves no WAL", async () => {
    const store = await DuckdbStore.open(target('close-small'));
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    const run = vi.spyOn(store.session, 'run');
    await store.close();
    const statements = run.mock.calls.map(([sql]) => sql);
    expect(statements).toContain('CHECKPOINT');
    expect(statements.filter((sql) => /\bthreads\b/i.test(sql))).toEqual([]);
    expect(existsSync(`${store.target.path}.wal`)).toBe(false);
  });
});

describe('a store opened again, unchanged', () => {
  it('has neither its layouts nor its facts written again', async () => {
    const first = await DuckdbStore.open(target('reopened'));
    await first.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    await first.close();
    const run = vi.spyOn((await loadDuckdbDriver()).DuckDBConnection.prototype, 'run');
    try {
      const again = await DuckdbStore.open(target('reopened'));
      expect(await again.readRecords('contacts')).toEqual([contact('c1', 1)]);
      await again.close();
      expect(run.mock.calls.map(([sql]) => sql).filter((sql) => /^\s*(INSERT|UPDATE|DELETE)\b/i.test(sql))).toEqual([]);
    } finally {
      run.mockRestore();
    }
  });
});

describe('a table dropped by hand', () => {
  it('is made again and its stream read again from the start: its saved state is forgotten with it', async () => {
    let store = await DuckdbStore.open(target('dropped'));
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }], 2, { fullRead: { first: true, last: true } }));
    await store.session.run(`DROP TABLE "${store.target.schema}".contacts`);
    await store.close();
    store = await DuckdbStore.open(target('dropped'));
    try {
      // Going on from the saved state would leave the rows written before the drop out of the copy for good.
      expect([...(await store.savedStates()).keys()]).toEqual(['pipeline_stages']);
      expect(store.notes).toContainEqual({ level: 'WARN', message: expect.stringMatching(/^contacts: its table or a column of it was missing in .* \(dropped by hand\?\): made again, and the stream is read again from the start\.$/) });
      expect(await rows(store, 'SELECT id FROM {schema}.contacts')).toEqual([]);
      expect(await rows(store, 'SELECT id FROM {schema}.pipeline_stages')).toEqual([{ id: 'a' }]);
    } finally {
      await store.close();
    }
  });
});

describe('a column dropped by hand', () => {
  it.each([
    ['a field\'s', 'dropped-column', ['name']],
    ['bookkeeping (_extra, _absent, _synced_at)', 'dropped-bookkeeping', ['_absent', '_synced_at']],
  ])('(%s) is added again and its stream read again from the start (its rows would fail to write for good)', async (_kind, name, columns) => {
    let store = await DuckdbStore.open(target(name));
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    for (const column of columns) await store.session.run(`ALTER TABLE "${store.target.schema}".contacts DROP COLUMN ${column}`);
    await store.close();
    store = await DuckdbStore.open(target(name));
    try {
      expect(await store.savedStates()).toEqual(new Map());
      expect(store.notes.filter((n) => n.level === 'WARN' && /made again/.test(n.message))).toHaveLength(1);
      await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
      expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), contact('c2', 2)]);
    } finally {
      await store.close();
    }
  });
});

describe('names that differ only in case', () => {
  it('share one column: the field beside it stays in _extra, never announced as drift', async () => {
    const records = [contact('c1', 1, { Email: 'Upper@example.com', Segment: 'b2b', segment: 'smb' })];
    let store = await DuckdbStore.open(target('case-names'));
    try {
      expect(new Set((await store.commit(checkpoint('contacts', records, 1))).drift)).toEqual(new Set(['Segment', 'segment']));
    } finally {
      await store.close();
    }
    store = await DuckdbStore.open(target('case-names'));
    try {
      expect(store.changes).toEqual(['contacts.Segment: new column (VARCHAR)']);
      expect((await store.commit(checkpoint('contacts', records, 2))).drift).toEqual([]);
      // The summary lists the column added, and nothing left for the next run.
      expect(store.schemaChanges()).toEqual([{ stream: 'contacts', column: 'Segment', change: 'added', from: null, to: 'VARCHAR' }]);
      expect(await store.readRecords('contacts')).toEqual(records);
    } finally {
      await store.close();
    }
  });
});

describe('a DOUBLE column widened to VARCHAR', () => {
  it('holds the text JavaScript writes for each double, exponents included', async () => {
    const ratios = [1e21, 1.5e300, 1e-7, 0.000001, 2.5e-8, 123456789012345680000, 0.1, -1e-300, 5e-324];
    let store = await DuckdbStore.open(target('double-text'));
    await store.commit(checkpoint('contacts', ratios.map((ratio, i) => contact(`c${i}`, i, { ratio })), ratios.length));
    await store.close();
    store = await DuckdbStore.open(target('double-text'));
    await store.commit(checkpoint('contacts', [contact('cx', 9, { ratio: 'n/a' })], 9));
    await store.close();
    store = await DuckdbStore.open(target('double-text'));
    try {
      expect(store.changes).toEqual(['contacts.ratio: DOUBLE -> VARCHAR']);
      expect(await rows(store, "SELECT ratio FROM {schema}.contacts WHERE id <> 'cx' ORDER BY id")).toEqual(ratios.map((ratio) => ({ ratio: String(ratio) })));
    } finally {
      await store.close();
    }
  });
});

describe('a DOUBLE column widened to JSON', () => {
  it('holds the numbers JavaScript writes (3, not 3.0), and gives each record back as sent', async () => {
    const ratios = [2.5, 3, 100, 123456789012, 1e21, 1e-7, -0.000001, 1.7976931348623157e308];
    const records = ratios.map((ratio, i) => contact(`c${i}`, i, { ratio }));
    let store = await DuckdbStore.open(target('double-json'));
    await store.commit(checkpoint('contacts', records, ratios.length));
    await store.close();
    store = await DuckdbStore.open(target('double-json'));
    const object = contact('cx', 9, { ratio: { unit: 'pct' } });
    await store.commit(checkpoint('contacts', [object], 9));
    await store.close();
    store = await DuckdbStore.open(target('double-json'));
    try {
      expect(store.changes).toEqual(['contacts.ratio: DOUBLE -> JSON']);
      expect(await rows(store, "SELECT CAST(ratio AS VARCHAR) AS ratio FROM {schema}.contacts WHERE id <> 'cx' ORDER BY id")).toEqual(ratios.map((ratio) => ({ ratio: String(ratio) })));
      expect(await store.readRecords('contacts')).toEqual([...records, object]);
    } finally {
      await store.close();
    }
  });
});

describe('the integers at the ends of BIGINT', () => {
  it('keep their exact texts when a decimal widens their column to DOUBLE, and the store opens again', async () => {
    const ends = [contact('c1', 1, { qualification_score: rawNumber('-9223372036854775808') }), contact('c2', 2, { qualification_score: rawNumber('9223372036854775807') })];
    let store = await DuckdbStore.open(target('int64-ends'));
    await store.commit(checkpoint('contacts', [...ends, contact('c3', 3, { qualification_score: rawNumber('1.5') })], 3));
    await store.close();
    for (let open = 0; open < 2; open++) {
      store = await DuckdbStore.open(target('int64-ends'));
      try {
        expect(store.changes).toEqual(open === 0 ? ['contacts.qualification_score: BIGINT -> DOUBLE'] : []);
        expect((await store.readRecords('contacts')).map((r) => r.qualification_score)).toEqual([rawNumber('-9223372036854775808'), rawNumber('9223372036854775807'), 1.5]);
      } finally {
        await store.close();
      }
    }
  });
});

describe('hostile values', () => {
  // Text that a loader with quoting, escapes or a NULL marker could mistake, exact integers at their limits,
  // instants to the microsecond: each back as it was sent, in its column and in readRecords, before and after
  // the drift they ask for is applied.
  const tricky = 'a "quoted", \'single\'\nline\r\nthen\ttab \\ back \\N ,;|';
  const records = [
    contact('h1', 1, {
      name: tricky,
      first_name: '\\N',
      last_name: '',
      email: null,
      phone: 'NULL',
      job_title: '\u0001\u0007\u001b\u007f\u0085 controls',
      company_name: 'Ação 😀 中文 \u2028\u2029 e\u0301',
      source_detail: '"',
      temperature: '""',
      qualification_score: rawNumber('-9223372036854775808'),
      updated_at: '2026-01-01T00:01:00.123456Z',
      extra_field: { [tricky]: [tricky, '\\N', '', null, rawNumber('1.50'), rawNumber('-0')] },
    }),
    contact('h2', 2, {
      name: '\n',
      first_name: ',',
      last_name: '\\',
      qualification_score: rawNumber('170141183460469231731687303715884105727'),
      updated_at: '2026-01-01t00:02:00.999999-03:00',
      extra_field: '',
    }),
    contact('h3', 3, { name: ' ', first_name: '\t', last_name: '\r', qualification_score: rawNumber('9223372036854775807'), updated_at: '0001-01-01T00:00:00.000001Z', extra_field: { '\\N': null } }),
  ];

  it('come back exactly, empty strings and nulls apart, the NULL marker a string', async () => {
    let store = await DuckdbStore.open(target('hostile'));
    try {
      await store.session.run("SET TimeZone = 'Asia/Kolkata'");
      await store.commit(checkpoint('contacts', records, 3));
      expect(await store.readRecords('contacts')).toEqual(records);
    } finally {
      await store.close();
    }
    store = await DuckdbStore.open(target('hostile'));
    try {
      expect(store.changes).toEqual(['contacts.qualification_score: BIGINT -> HUGEINT', 'contacts.extra_field: new column (JSON)']);
      const back = await store.readRecords('contacts');
      expect(back).toEqual(records);
      expect(JSON.stringify(back)).toBe(JSON.stringify(records));
      const cells = await rows(
        store,
        'SELECT id, name, first_name, last_name, email IS NULL AS no_email, phone, job_title, company_name, source_detail, temperature, ' +
          'CAST(qualification_score AS VARCHAR) AS score, epoch_us(updated_at) AS us FROM {schema}.contacts ORDER BY id',
      );
      expect(cells).toEqual([
        {
          id: 'h1', name: tricky, first_name: '\\N', last_name: '', no_email: true, phone: 'NULL', job_title: '\u0001\u0007\u001b\u007f\u0085 controls',
          company_name: 'Ação 😀 中文 \u2028\u2029 e\u0301', source_detail: '"', temperature: '""', score: '-9223372036854775808',
          us: BigInt(Date.parse('2026-01-01T00:01:00.123Z')) * 1000n + 456n,
        },
        {
          id: 'h2', name: '\n', first_name: ',', last_name: '\\', no_email: false, phone: '+5511999990000', job_title: 'Buyer', company_name: 'Acme',
          source_detail: null, temperature: 'warm', score: '170141183460469231731687303715884105727', us: BigInt(Date.parse('2026-01-01T03:02:00.999Z')) * 1000n + 999n,
        },
        {
          id: 'h3', name: ' ', first_name: '\t', last_name: '\r', no_email: false, phone: '+5511999990000', job_title: 'Buyer', company_name: 'Acme',
          source_detail: null, temperature: 'warm', score: '9223372036854775807', us: BigInt(Date.parse('0001-01-01T00:00:00.000Z')) * 1000n + 1n,
        },
      ]);
      // Written again into the widened column: the same rows.
      await store.commit(checkpoint('contacts', records, 4));
      expect(await store.readRecords('contacts')).toEqual(records);
    } finally {
      await store.close();
    }
  });
});

describe("DuckDB's error in a failure's words", () => {
  it("keeps its first paragraph, not the advice DuckDB appends (said once per account and stream, it would bury the run's error)", () => {
    const oom =
      'Out of Memory Error: failed to pin block of size 256.0 KiB (60.8 MiB/61.0 MiB used)\n\nPossible solutions:\n' +
      "* Reducing the number of threads (SET threads=X)\n* Disabling insertion-order preservation (SET preserve_insertion_order=false)\n* Increasing the memory limit (SET memory_limit='...GB')\n\n" +
      'See also https://duckdb.org/docs/stable/guides/performance/how_to_tune_workloads';
    const sql = new DuckdbSql(undefined as never, undefined as never, target('words'));
    const error = sql.error(new Error(oom));
    expect(error.message).toBe(`Cannot write the DuckDB store "${target('words').path}": Out of Memory Error: failed to pin block of size 256.0 KiB (60.8 MiB/61.0 MiB used)`);
    expect(error.failureType).toBe('system_error');
  });
});

describe('rows staged as CSV', () => {
  // Every kind of column, and values a CSV reader could mistake: the staged cells must be those the appender gives.
  const values: Record<string, unknown>[] = [
    { n: rawNumber('1e+21'), h: rawNumber('-170141183460469231731687303715884105728'), i: rawNumber('9223372036854775807'), b: true, j: { a: [rawNumber('1.50'), '"q"', null] }, t: '1969-12-31T23:59:59.999999Z', s: '' },
    { n: rawNumber('5e-324'), h: rawNumber('170141183460469231731687303715884105727'), i: rawNumber('-9223372036854775808'), b: false, j: '', t: '2026-01-01t00:02:00.123456789z', s: ' lead, trail ' },
    { n: rawNumber('1.7976931348623157e+308'), h: 0, i: -1, b: null, j: ['\ud800', '\\N', 'a,b\n'], t: '0001-01-01T00:00:00.000001+01:00', s: '\\N' },
    { n: rawNumber('-0.1'), h: 1, i: 0, j: null, t: '9999-12-31T23:59:59.999Z', s: 'x"y\r\n,z' },
    { n: 3, h: 2, i: 2, b: true, j: { '\u0000': '\u2028' }, t: '2024-02-29 12:00:00+05:30', s: 'Ação 😀 \ud83d lone' },
    { n: rawNumber('2.4703282292062328e-324'), h: 3, i: 3, t: '2024-01-01T00:00:00Z', s: '\u0001\t' },
    { n: rawNumber('1e400'), h: 4, i: 4, s: 'no "instant"' },
    { n: rawNumber('123456789012345678901234567890123456789012'), h: 5, i: 5, s: ',' },
  ];

  it('load the same cells as the appender did, whatever the session TimeZone', async () => {
    const store = await DuckdbStore.open(target('csv-cells'));
    try {
      await store.session.run("SET TimeZone = 'Pacific/Chatham'");
      const contacts = store.layoutOf('contacts');
      const layout: StoreLayout = {
        ...contacts,
        columns: [
          { field: 'id', kind: 'text' },
          { field: 'n', kind: 'number' },
          { field: 'h', kind: 'int128' },
          { field: 'i', kind: 'int64' },
          { field: 'b', kind: 'boolean' },
          { field: 'j', kind: 'json' },
          { field: 't', kind: 'timestamp' },
          { field: 's', kind: 'text' },
        ],
      } as StoreLayout;
      const rowsOf = values.map((v, i) => encodeRow(layout, { id: `r${i}`, ...v, ...(i === 1 ? { unknown_field: 'to _extra' } : {}) }, DUCKDB_DIALECT).cells);
      const sql = new DuckdbSql(store.session, await loadDuckdbDriver(), store.target);
      const stage = { name: '_csv_test_stage', ref: '_csv_test_stage', layout, columns: [] };
      const staged = async (): Promise<unknown[]> =>
        (await rows(store, 'SELECT id, n, CAST(h AS VARCHAR) AS h, i, b, CAST(j AS VARCHAR) AS j, epoch_us(t) AS t, s, CAST(_extra AS VARCHAR) AS x, CAST(_absent AS VARCHAR) AS a FROM _csv_test_stage ORDER BY id')).map((r) => ({ ...r, n: Object.is(r.n, -0) ? '-0' : r.n }));
      await sql.fillStage(stage, { ...sql.newStaged(), cells: [rowsOf as Cell[][]] });
      const appended = await staged();
      expect(csvBytes(rowsOf, layout.columns.map((c) => c.kind))).toBeInstanceOf(Buffer);
      // Two checkpoints' CSV bytes, appended to the part's file.
      const asCsv = sql.newStaged();
      sql.stageRows(asCsv, rowsOf.slice(0, 3) as Cell[][], stage);
      sql.stageRows(asCsv, rowsOf.slice(3) as Cell[][], stage);
      expect(asCsv.cells).toEqual([]);
      await sql.fillStage(stage, asCsv);
      sql.dropStaged(asCsv);
      expect(await staged()).toEqual(appended);
      expect(appended).toHaveLength(values.length);
      expect(appended[1]).toMatchObject({ s: ' lead, trail ', t: BigInt(Date.parse('2026-01-01T00:02:00.123Z')) * 1000n + 456n });
      expect(appended[2]).toMatchObject({ b: null, s: '\\N', t: -62135600400000000n + 1n });
      expect(appended[0]).toMatchObject({ s: '', t: -1n });
    } finally {
      await store.close();
    }
  });

  it('a row too long for a CSV line goes through the appender, with the rest of its group, exactly', async () => {
    const long = 'x'.repeat(600_000) + '"é,\n'.repeat(100_000);
    const records = [contact('c1', 1), contact('c2', 1, { name: long, extra_field: long }), contact('c3', 1, { name: '' })];
    const store = await DuckdbStore.open(target('csv-long'));
    try {
      expect(csvBytes([[long]], ['text'])).toBeUndefined();
      await store.commit(checkpoint('contacts', records.slice(0, 1), 1));
      await store.commit(checkpoint('contacts', records, 2));
      expect(await store.readRecords('contacts')).toEqual(records);
    } finally {
      await store.close();
    }
  });

  it('a text larger than half of DuckDB\'s 64 MB of buffers (a page holds up to 64 MiB) is written, again at the next run, and replaced', async () => {
    // 30 MB of text, and 20 MB (10 million characters of two bytes in UTF-8) in another field of the same row.
    const huge = contact('c2', 1, { name: 'x'.repeat(30_000_000), job_title: 'é'.repeat(10_000_000) });
    const runs = [[contact('c1', 1), huge], [huge, contact('c3', 2)], [contact('c2', 3)], []];
    for (const [i, records] of runs.entries()) {
      const store = await DuckdbStore.open(target('huge-text'));
      try {
        await store.commit(checkpoint('contacts', records, i + 1));
      } finally {
        await store.close();
      }
      // Read as a dashboard would, with DuckDB's own memory limit.
      const { DuckDBInstance } = await loadDuckdbDriver();
      const instance = await DuckDBInstance.create(join(dir, 'huge-text.duckdb'), { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      try {
        const sql = "SELECT id, length(name) AS name, name = repeat('x', 30000000) AS x, length(job_title) AS job_title, job_title = repeat('é', 10000000) AS e FROM contacts ORDER BY id";
        const big = { id: 'c2', name: 30_000_000n, x: true, job_title: 10_000_000n, e: true };
        const small = (id: string) => ({ id, name: 7n, x: false, job_title: 5n, e: false });
        expect((await connection.runAndReadAll(sql)).getRowObjectsJS()).toEqual(i === 0 ? [small('c1'), big] : [small('c1'), i === 1 ? big : small('c2'), small('c3')]);
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    }
  });
});

describe('many long texts', () => {
  it('rows of long texts, 40 MB of them in a run and 80 MB in the file, are written and read back', async () => {
    // DuckDB keeps the long texts of a vector's rows (2,048) in memory together until they are in the file: 50 MB of
    // them failed under its 64 MB ("failed to pin block"), at every run.
    const text = (i: number): string => String(i % 10).repeat(100_000);
    for (const run of [0, 1]) {
      const store = await DuckdbStore.open(target('long-texts'));
      try {
        for (let first = run * 400; first < (run + 1) * 400; first += 50) {
          const records = Array.from({ length: 50 }, (_, j) => contact(`c${first + j}`, 1, { name: text(first + j) }));
          await store.commit(checkpoint('contacts', records, first + 1));
        }
      } finally {
        await store.close();
      }
    }
    const { DuckDBInstance } = await loadDuckdbDriver();
    const instance = await DuckDBInstance.create(join(dir, 'long-texts.duckdb'), { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      const sql = "SELECT count(*) AS n, count(*) FILTER (WHERE name = repeat(CAST(CAST(substr(id, 2) AS INTEGER) % 10 AS VARCHAR), 100000)) AS same FROM contacts";
      expect((await connection.runAndReadAll(sql)).getRowObjectsJS()).toEqual([{ n: 800n, same: 800n }]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});

describe('ids unique without a key constraint', () => {
  // Stream tables carry no PRIMARY KEY (tables.ts): each group replaces the rows of its ids in one transaction.
  // Pages of 200 ids that overlap by half and wrap around 1,000 ids, in groups that merge pages and across
  // groups, in writers killed at random moments and resumed: one row per id, each from the last page committed.
  const IDS = 1000;
  const pageIds = (page: number): string[] => Array.from({ length: 200 }, (_, j) => `e${String((page * 100 + j) % IDS).padStart(4, '0')}`);

  it('overlapping pages, kills and resumes leave one row per id, the last committed page', async () => {
    const path = join(dir, 'overlap.duckdb');
    const expected = new Map<string, string>();
    let store = await DuckdbStore.open(target('overlap'));
    try {
      const keys = await rows(store, "SELECT count(*) AS n FROM duckdb_constraints() WHERE table_name = 'stage_events' AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')");
      expect(Number(keys[0]?.n)).toBe(0);
    } finally {
      await store.close();
    }
    for (const [run, delayMs] of [0, 120, 300, 60].entries()) {
      const writer = writerProcess(path, 'overlap', run);
      await said(writer, 'wrote');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await killed(writer);
      store = await DuckdbStore.open(target('overlap'));
      try {
        const state = JSON.parse((await store.savedStates()).get('stage_events') ?? '{}') as { run: number; n: number };
        expect(state.run).toBe(run);
        for (let page = 0; page <= state.n; page++) for (const id of pageIds(page)) expected.set(id, `r${run}_${page}`);
        const counts = await rows(store, 'SELECT count(*) AS n, count(DISTINCT id) AS ids FROM {schema}.stage_events');
        expect(counts.map((c) => [Number(c.n), Number(c.ids)])).toEqual([[expected.size, expected.size]]);
        const held = await rows(store, 'SELECT id, contact_id FROM {schema}.stage_events ORDER BY id');
        expect(new Map(held.map((r) => [String(r.id), String(r.contact_id)]))).toEqual(new Map([...expected].sort()));
      } finally {
        await store.close();
      }
    }
    expect(expected.size).toBe(IDS);
  }, 120_000);
});

/** A process that opens the store (the built one) and writes checkpoints until killed; it prints `open` once it holds the file. */
function writerProcess(path: string, mode: 'hold' | 'write' | 'overlap', run = 0): ChildProcess {
  const store = join(ROOT, 'dist', 'stores', 'duckdb', 'store.js');
  const targetModule = join(ROOT, 'dist', 'stores', 'target.js');
  const code = `
    const { DuckdbStore } = await import(${JSON.stringify(store)});
    const { parseStoreTarget } = await import(${JSON.stringify(targetModule)});
    const s = await DuckdbStore.open(parseStoreTarget(${JSON.stringify(`duckdb:${path}`)}, undefined, {}));
    process.stdout.write('open\\n');
    if (${JSON.stringify(mode)} === 'hold') { setInterval(() => {}, 1000); }
    else {
      for (let i = 0; ; i++) {
        const records = [];
        for (let j = 0; j < 200; j++) {
          const created_at = new Date(Date.UTC(2026, 0, 1) + i * 60000).toISOString();
          if (${JSON.stringify(mode)} === 'overlap') records.push({ id: 'e' + String((i * 100 + j) % 1000).padStart(4, '0'), contact_id: 'r${run}_' + i, created_at });
          else records.push({ id: 'k${run}_' + i + '_' + j, contact_id: 'c', created_at });
        }
        await s.write({ stream: 'stage_events', records, state: JSON.stringify({ run: ${run}, n: i }) });
        // pages arrive from the network: the group writer's timer runs between them
        if (${JSON.stringify(mode)} === 'overlap') await new Promise((resolve) => setTimeout(resolve, 2));
        // 'wrote' once the first page is committed (with overlap, the first 13: every id at least once)
        if (i === (${JSON.stringify(mode)} === 'overlap' ? 12 : 0)) { await s.flush(); process.stdout.write('wrote\\n'); }
      }
    }`;
  return spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
}

function said(child: ChildProcess, word: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes(`${word}\n`)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the writer process exited (${code}) before saying ${word}`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('a file that is not DuckDB', () => {
  it('a SQLite database named as DuckDB is a config_error saying so (not a missing extension), the file unchanged', async () => {
    const path = join(dir, 'sqlite.duckdb');
    const db = new DatabaseSync(path);
    db.exec('CREATE TABLE contacts (id TEXT PRIMARY KEY)');
    db.close();
    const before = readFileSync(path);
    const err = await connectorFailure(() => DuckdbStore.open(target('sqlite')));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/is a SQLite database, not a DuckDB file/);
    expect(err.message).not.toMatch(/extension/i);
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});

describe('one writer per file', () => {
  it("a second process is refused at once (75) naming the first's pid; once that process is gone (killed), the file opens", async () => {
    const path = join(dir, 'locked.duckdb');
    const holder = writerProcess(path, 'hold');
    try {
      await said(holder, 'open');
      const err = await connectorFailure(() => DuckdbStore.open(target('locked')));
      expect(err.failureType).toBe('transient_error');
      expect(err.message).toContain(`Another process has the DuckDB file "${path}" open (pid ${holder.pid}`);
      expect(err.message).toMatch(/Run again once it has finished \(exit 75/);
    } finally {
      await killed(holder);
    }
    const store = await DuckdbStore.open(target('locked'));
    await store.close();
  });
});

describe('a writer killed at any moment', () => {
  it('leaves whole checkpoints with their state, which the next run resumes from', async () => {
    const path = join(dir, 'killed.duckdb');
    const written: number[] = [];
    for (const [run, delayMs] of [0, 150, 400].entries()) {
      const writer = writerProcess(path, 'write', run);
      await said(writer, 'wrote');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await killed(writer);
      const store = await DuckdbStore.open(target('killed'));
      try {
        const state = JSON.parse((await store.savedStates()).get('stage_events') ?? '{}') as { run: number; n: number };
        expect(state.run).toBe(run);
        written.push(state.n + 1);
        // Every run's rows are exactly its committed checkpoints, whole: none half-written, none past the state.
        const counts = await rows(store, "SELECT split_part(id, '_', 1) AS run, count(*) AS n, max(CAST(split_part(id, '_', 2) AS INTEGER)) AS last FROM {schema}.stage_events GROUP BY 1 ORDER BY 1");
        expect(counts.map((c) => [c.run, Number(c.n), Number(c.last)])).toEqual(written.map((n, k) => [`k${k}`, n * 200, n - 1]));
      } finally {
        await store.close();
      }
    }
  }, 120_000);
});

describe('the open files limit of the process (ulimit -n: RLIMIT_NOFILE)', () => {
  it('a checkpoint that cannot open its staged file for want of file descriptors is a config_error naming the limit', async () => {
    // A process under `ulimit -n 64` whose descriptors are all taken (as the sockets of many accounts read at once take
    // them) once the store is open: the next group's staged file cannot be opened (EMFILE), a limit every later run
    // meets until it is raised, not a bug of the connector's (70).
    const path = join(dir, 'nofile.duckdb');
    const store = join(ROOT, 'dist', 'stores', 'duckdb', 'store.js');
    const targetModule = join(ROOT, 'dist', 'stores', 'target.js');
    const code = `
      const { openSync } = await import('node:fs');
      const { DuckdbStore } = await import(${JSON.stringify(store)});
      const { parseStoreTarget } = await import(${JSON.stringify(targetModule)});
      const s = await DuckdbStore.open(parseStoreTarget(${JSON.stringify(`duckdb:${path}`)}, undefined, {}));
      const records = (n) => [{ id: 'k' + n, contact_id: 'c', created_at: '2026-01-01T00:00:00.000Z' }];
      await s.commit({ stream: 'stage_events', records: records(1), state: '{"n":1}' });
      try { for (;;) openSync('/dev/null', 'r'); } catch (err) { if (err.code !== 'EMFILE') throw err; }
      try {
        await s.commit({ stream: 'stage_events', records: records(2), state: '{"n":2}' });
        console.log(JSON.stringify({ committed: true }));
      } catch (err) {
        console.log(JSON.stringify({ type: err.failureType, message: err.message }));
      }
      process.exit(0);`;
    const child = spawn('sh', ['-c', 'ulimit -n 64 && exec "$0" "$@"', process.execPath, '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    expect(status).toBe(0);
    const got = JSON.parse(out.trim()) as { type?: string; message?: string };
    expect(got.type).toBe('config_error');
    expect(got.message).toContain(`Cannot write the DuckDB store "${path}": the process reached its limit of 64 open files (ulimit -n, RLIMIT_NOFILE)`);
    expect(got.message).toMatch(/Raise the limit \(ulimit -n .*LimitNOFILE.*\) or lower max_concurrent_accounts.*run replicate again/);
  });
});
