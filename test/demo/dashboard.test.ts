/** The demo's dashboard (demo/dashboard.ts): plain SQL over a replica that the replica store wrote. */
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { withTempDatabases } from '../helpers/suite.js';
import { replicaSummary, summarize } from '../../demo/dashboard.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { contact, conversation, iso } from '../helpers/fake-api.js';

const [contacts, conversations, stages] = ['contacts', 'conversations', 'pipeline_stages'].map((name) => findStream(name) as StreamDefinition) as [
  StreamDefinition,
  StreamDefinition,
  StreamDefinition,
];
const newDb = withTempDatabases('demo-dashboard-');

describe('replicaSummary', () => {
  it('counts contacts by temperature and stage, conversations won/lost, and the median first-response time', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    const t = (m: number) => iso(m);
    store.commit(stages, [{ id: 's1', name: 'New' }, { id: 's2', name: 'Won' }], {});
    store.commit(contacts, [
      contact('c1', 1, { temperature: 'hot', current_stage_id: 's1' }),
      contact('c2', 1, { temperature: 'hot', current_stage_id: 's2' }),
      contact('c3', 1, { temperature: 'cold', current_stage_id: 's1' }),
      contact('c4', 1, { temperature: null, current_stage_id: 's1' }),
    ], { sync_watermark: t(30) });
    store.commit(conversations, [
      conversation('v1', 1, { created_at: t(0), first_response_at: t(1), outcome_category: 'converted' }), // 60 s
      conversation('v2', 1, { created_at: t(0), first_response_at: t(3), outcome_category: 'not_interested' }), // 180 s
      conversation('v3', 1, { created_at: t(0), first_response_at: t(10), outcome_category: 'won' }), // 600 s
      conversation('v4', 1, { created_at: t(0), first_response_at: t(20), outcome_category: null }), // 1200 s
      conversation('v5', 1, { created_at: t(0), first_response_at: null }),
    ], { sync_watermark: t(31) });
    store.close();
    const summary = replicaSummary(path);
    expect(summary.contacts.total).toBe(4);
    expect(summary.contacts.byTemperature).toEqual([{ value: 'hot', count: 2 }, { value: null, count: 1 }, { value: 'cold', count: 1 }]);
    expect(summary.contacts.byStage).toEqual([{ value: 's1', count: 3, name: 'New' }, { value: 's2', count: 1, name: 'Won' }]);
    expect(summary.conversations).toMatchObject({ total: 5, won: 2, lost: 1, medianFirstResponseSeconds: 390, respondedCount: 4 });
    expect(summary.watermarks).toEqual({ contacts: t(30), conversations: t(31), pipeline_stages: null });
  });

  it('names stages from the typed column the service\'s description gave them, or from _extra without it', () => {
    const stageRecords = [{ id: 's1', key: 'new', name: 'New lead' }, { id: 's2', key: 'won' }];
    for (const typed of [true, false]) {
      const path = newDb();
      const schemas = typed
        ? new Map([[stages.name, { type: 'object', properties: { id: { type: 'string' }, key: { type: 'string' }, name: { type: ['null', 'string'] } } }]])
        : undefined;
      const store = new ReplicaStore(path, undefined, { schemas });
      store.commit(stages, stageRecords, {});
      store.commit(contacts, [contact('c1', 1, { current_stage_id: 's1' }), contact('c2', 1, { current_stage_id: 's2' })], { sync_watermark: iso(3) });
      const typedName = store.db.prepare("SELECT count(*) AS n FROM pragma_table_info('pipeline_stages') WHERE name = 'name'").get()?.n;
      store.close();
      expect(typedName, String(typed)).toBe(typed ? 1 : 0);
      expect(replicaSummary(path).contacts.byStage).toEqual([{ value: 's1', count: 1, name: 'New lead' }, { value: 's2', count: 1, name: 'won' }]);
    }
  });

  it('reads one snapshot: a run committing between its queries changes none of its figures', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1, { temperature: 'hot', current_stage_id: 's1' })], { sync_watermark: iso(3) });
    store.close();
    // A dashboard's reader on the file in WAL mode, as during a run; the run's commit lands after its first queries.
    const writer = new DatabaseSync(path);
    writer.exec('PRAGMA journal_mode = WAL');
    const reader = new DatabaseSync(path, { readOnly: true });
    let committed = false;
    const commitOnce = (): void => {
      if (committed) return;
      committed = true;
      writer.exec(`INSERT INTO contacts (id, temperature, current_stage_id, _synced_at) VALUES ('c2', 'cold', 's1', '${iso(4)}')`);
    };
    const during = new Proxy(reader, {
      get(target, name) {
        if (name === 'prepare') {
          return (sql: string) => {
            if (/\boutcome_category\b/.test(sql)) commitOnce();
            return target.prepare(sql);
          };
        }
        const value = Reflect.get(target, name, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    try {
      const summary = summarize(during);
      expect(committed).toBe(true);
      const byStage = summary.contacts.byStage.reduce((n, s) => n + s.count, 0);
      const byTemperature = summary.contacts.byTemperature.reduce((n, t) => n + t.count, 0);
      expect({ byStage, byTemperature, total: summary.contacts.total }).toEqual({ byStage: 1, byTemperature: 1, total: 1 });
      expect(reader.isTransaction).toBe(false);
      expect(summarize(reader).contacts.total).toBe(2);
    } finally {
      reader.close();
      writer.close();
    }
  });

  it('names a missing database', () => {
    expect(() => replicaSummary('/nonexistent/replica.db')).toThrow(/No replica database at "\/nonexistent\/replica.db"/);
  });
});
