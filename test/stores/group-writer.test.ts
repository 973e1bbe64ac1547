/**
 * The group writer's statements, seen through a store that records them
 * (the real stores run them in store-suite.ts): what the writer leaves to
 * each store, and what it runs once per part.
 */
import { describe, expect, it, vi } from 'vitest';
import { ConnectorError } from '../../src/errors.js';
import { storeTableSpecs } from '../../src/stores/checkpoint.js';
import { GroupWriter, type StageTable, type StoreSql } from '../../src/stores/group-writer.js';
import type { Cell, StoreDialect } from '../../src/stores/values.js';
import { at, checkpoint, contact } from './records.js';

/** A store that runs nothing: each statement and each fill of a stage recorded. */
class RecordingSql implements StoreSql<Cell[][]> {
  readonly dialect: StoreDialect = { numberExact: () => true, storesString: () => true, textOf: (_kind, expr) => expr, instantOf: (_kind, expr) => expr };
  readonly statements: string[] = [];
  readonly fills: string[] = [];

  async run(sql: string): Promise<number> {
    this.statements.push(sql);
    return 0;
  }
  async text(): Promise<string | undefined> {
    return undefined;
  }
  async any(): Promise<boolean> {
    return false;
  }
  upsertSql(table: string, stage: string): string[] {
    return [`UPSERT ${table} FROM ${stage}`];
  }
  async createStage(): Promise<void> {}
  /** Every part's staged rows made, and those let go. */
  readonly staged: Cell[][][] = [];
  readonly dropped = new Set<Cell[][]>();
  newStaged(): Cell[][] {
    const staged: Cell[][] = [];
    this.staged.push(staged);
    return staged;
  }
  stageRows(staged: Cell[][], rows: Cell[][]): void {
    staged.push(...rows);
  }
  async fillStage(stage: StageTable, staged: Cell[][]): Promise<void> {
    this.fills.push(`${stage.name}:${staged.length}`);
  }
  dropStaged(staged: Cell[][]): void {
    this.dropped.add(staged);
  }
  isFatal(): boolean {
    return false;
  }
  error(err: unknown): ConnectorError {
    return new ConnectorError('system_error', String(err));
  }
}

describe('the group writer', () => {
  it("leaves emptying a stage to the store's fill: two accounts' parts of a stream in one group, no DELETE of the stage", async () => {
    const sql = new RecordingSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), true);
    const writer = new GroupWriter(sql, 's', specs);
    const of = (account: string, ids: string[]) => ({
      ...checkpoint('contacts', ids.map((id) => ({ ...contact(id, 1), account })), 1),
      account,
      state: JSON.stringify({ accounts: { [account]: { sync_watermark: at(1) } } }),
    });
    await writer.write(of('a', ['c1']));
    await writer.write(of('b', ['c1', 'c2']));
    await writer.flush();
    const stage = specs.findIndex((s) => s.layout.stream === 'contacts');
    expect(sql.fills).toEqual([`_replica_stage_${stage}:1`, `_replica_stage_${stage}:2`]);
    expect(sql.statements.filter((s) => /DELETE FROM _replica_stage_/.test(s))).toEqual([]);
    expect(sql.statements.at(-1)).toBe('COMMIT');
  });
});

describe('a group holds one row per id of a stream', () => {
  it('starts the next group at a checkpoint that repeats an id the group holds; a checkpoint of new ids joins it', async () => {
    const sql = new RecordingSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), false);
    const writer = new GroupWriter(sql, 's', specs, { groupMs: 60_000 });
    await writer.write(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1));
    await writer.write(checkpoint('contacts', [contact('c3', 2)], 2));
    // c2 changed during the read and came again: its later row goes in the next group, written after the first.
    await writer.write(checkpoint('contacts', [contact('c2', 3), contact('c4', 3)], 3));
    await writer.flush();
    const stage = specs.findIndex((s) => s.layout.stream === 'contacts');
    expect(sql.fills).toEqual([`_replica_stage_${stage}:3`, `_replica_stage_${stage}:2`]);
    expect(sql.statements.filter((s) => s === 'COMMIT')).toHaveLength(2);
  });
});

describe("a group's staged rows (a store may keep them in files)", () => {
  it('are let go once the group is over: committed, or never written because the store was lost', async () => {
    class LosingSql extends RecordingSql {
      lose = false;
      override async run(sql: string): Promise<number> {
        if (this.lose && sql === 'COMMIT') throw new Error('FATAL: the store is gone');
        return super.run(sql);
      }
      override isFatal(): boolean {
        return true;
      }
    }
    const sql = new LosingSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), false);
    const writer = new GroupWriter(sql, 's', specs, { groupMs: 60_000, maxGroupRows: 2 });
    await writer.write(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1));
    await writer.flush();
    expect(sql.staged.map((s) => sql.dropped.has(s))).toEqual([true]);
    sql.lose = true;
    // The first group is being written (and fails) while the second, full, waits behind it.
    await writer.write(checkpoint('contacts', [contact('c3', 2), contact('c4', 2)], 2));
    await writer.write(checkpoint('contacts', [contact('c5', 3), contact('c6', 3)], 3));
    await expect(writer.flush()).rejects.toThrow(/gone/);
    expect(sql.staged.map((s) => sql.dropped.has(s))).toEqual([true, true, true]);
  });
});

describe("the group writer's clock", () => {
  it('commits a gathering group after groupMs even when the machine clock steps back meanwhile (an NTP step, a clock fix)', async () => {
    const sql = new RecordingSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), false);
    const writer = new GroupWriter(sql, 's', specs, { groupMs: 20 });
    const wall = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(wall);
    try {
      await writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
      // While the group gathers, the wall clock goes back an hour.
      clock.mockReturnValue(wall - 3_600_000);
      await vi.waitFor(() => expect(sql.statements).toContain('COMMIT'), { timeout: 10_000 });
    } finally {
      clock.mockRestore();
      writer.abandon();
    }
  });
});

describe('a checkpoint whose rows the store cannot stage (a file it cannot open: no descriptor left, a full disk)', () => {
  it('is refused with its stream: its state is never committed, nor a later one of the stream; other streams go on', async () => {
    class StatesSql extends RecordingSql {
      failStaging = false;
      readonly states: (string | null)[][] = [];
      override async run(sql: string, params?: readonly (string | null)[]): Promise<number> {
        if (sql.includes('_replica_state') && params !== undefined) this.states.push([...params]);
        return super.run(sql);
      }
      override stageRows(staged: Cell[][], rows: Cell[][]): void {
        if (this.failStaging) throw new Error("EMFILE: too many open files, open 'x.duckdb.tmp/replica_stage_1.csv'");
        super.stageRows(staged, rows);
      }
    }
    const sql = new StatesSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), false);
    const writer = new GroupWriter(sql, 's', specs, { groupMs: 60_000 });
    await writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    await writer.flush();
    // The next group: the stream's first checkpoint in it cannot be staged.
    sql.failStaging = true;
    await expect(writer.write(checkpoint('contacts', [contact('c2', 2)], 2))).rejects.toThrow(/EMFILE/);
    sql.failStaging = false;
    await expect(writer.write(checkpoint('contacts', [contact('c3', 3)], 3))).rejects.toThrow(/EMFILE/);
    await writer.write(checkpoint('conversations', [{ id: 'v1', contact_id: 'c1', created_at: at(0), updated_at: at(1) }], 1));
    await writer.flush();
    expect(sql.states).toEqual([
      ['contacts', checkpoint('contacts', [], 1).state],
      ['conversations', checkpoint('conversations', [], 1).state],
    ]);
  });
});

describe("a store that takes a group's states at once (statesAtOnce: DuckDB)", () => {
  it("gets every part's state in one statement, each under its part's key", async () => {
    class StatesAtOnceSql extends RecordingSql {
      readonly statesAtOnce = true;
      readonly states: (string | null)[][] = [];
      override async run(sql: string, params?: readonly (string | null)[]): Promise<number> {
        if (sql.includes('_replica_state') && params !== undefined) this.states.push([...params]);
        return super.run(sql);
      }
    }
    const sql = new StatesAtOnceSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), true);
    const writer = new GroupWriter(sql, 's', specs, { groupMs: 60_000 });
    const of = (account: string, stream: string, minute: number) => ({ ...checkpoint(stream, [], minute), account, state: `${stream} of ${account} at ${minute}` });
    await writer.write(of('a', 'contacts', 1));
    await writer.write(of('b', 'contacts', 2));
    await writer.write(of('a', 'conversations', 3));
    await writer.flush();
    expect(sql.states).toEqual([['contacts/a', 'contacts of a at 1', 'contacts/b', 'contacts of b at 2', 'conversations/a', 'conversations of a at 3']]);
  });
});

describe('a full read whole in one part (its first and last checkpoints in one group)', () => {
  it('keeps the rows its stage holds, marking no ids; a full read over several parts marks them', async () => {
    const sql = new RecordingSql();
    const { specs } = storeTableSpecs({ key: (n) => n, maxBytes: 63 }, undefined, new Map(), false);
    const writer = new GroupWriter(sql, 's', specs);
    const stage = `_replica_stage_${specs.findIndex((s) => s.layout.stream === 'pipeline_stages')}`;
    await writer.commit(checkpoint('pipeline_stages', [{ id: 'a' }, { id: 'b' }], 1, { fullRead: { first: true, last: true } }));
    expect(sql.statements.filter((s) => s.includes('_replica_full_read'))).toEqual(['DELETE FROM "s"."_replica_full_read" WHERE stream = $1']);
    expect(sql.statements.filter((s) => /NOT EXISTS/.test(s))).toEqual([`DELETE FROM "s"."pipeline_stages" t WHERE NOT EXISTS (SELECT 1 FROM ${stage} s WHERE s."id" = t."id")`]);
    sql.statements.length = 0;
    await writer.commit(checkpoint('pipeline_stages', [{ id: 'a' }], 2, { fullRead: { first: true, last: false } }));
    await writer.commit(checkpoint('pipeline_stages', [{ id: 'b' }], 3, { fullRead: { first: false, last: true } }));
    expect(sql.statements.filter((s) => /INSERT INTO "s"."_replica_full_read"/.test(s))).toHaveLength(2);
    expect(sql.statements.filter((s) => /NOT EXISTS/.test(s))).toEqual([
      'DELETE FROM "s"."pipeline_stages" t WHERE NOT EXISTS (SELECT 1 FROM "s"."_replica_full_read" m WHERE m.stream = $1 AND m.id = t."id")',
    ]);
  });
});
