/**
 * Deletions as tombstones, end to end: `read` with deletions_as_tombstones
 * against the emulator; every record validates against the discovered
 * schemas, and a simulated append+dedup destination ends with the deleted
 * rows gone and exactly the service's live contacts and conversations.
 */
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { SOURCE_BIN, parseLines, runCli, writeJson } from '../../helpers/cli.js';
import { changeRound, type Account } from '../../helpers/emulator-runs.js';

type Rec = Record<string, unknown>;
const DELETED_AT = '_ab_cdc_deleted_at';
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

interface Stream {
  name: string;
  json_schema: Rec;
  supported_sync_modes: string[];
  source_defined_primary_key: string[][];
  default_cursor_field?: string[];
}

/** An Airbyte destination in append+dedup mode: latest version per id by cursor (later arrival wins ties); tombstoned rows dropped. */
class DedupDestination {
  private readonly tables = new Map<string, Map<string, Rec>>();
  private readonly cursors: ReadonlyMap<string, string>;
  constructor(cursors: ReadonlyMap<string, string>) {
    this.cursors = cursors;
  }
  write(stream: string, data: Rec): void {
    let table = this.tables.get(stream);
    if (!table) this.tables.set(stream, (table = new Map()));
    const cursor = this.cursors.get(stream);
    const id = String(data.id);
    const current = table.get(id);
    if (current && cursor && Date.parse(String(current[cursor])) > Date.parse(String(data[cursor]))) return;
    table.set(id, data);
  }
  /** The final table: tombstoned rows deleted, sorted by id. */
  rows(stream: string): Rec[] {
    return [...(this.tables.get(stream)?.values() ?? [])]
      .filter((r) => r[DELETED_AT] === undefined || r[DELETED_AT] === null)
      .sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  }
}

describe('read with deletions_as_tombstones', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('tombstones-e2e-', { contacts: 250, seed: 31 }, (s) => ({ account, dir } = s));

  it('emits tombstones that validate against the discovered schemas; an append+dedup destination ends with the deleted rows gone', { timeout: 120_000 }, async () => {
    const config = account.config(dir, { deletions_as_tombstones: true, page_size: 50 });
    const discovered = await runCli(SOURCE_BIN, ['discover', '--config', config]);
    expect(discovered.code, discovered.stderr).toBe(0);
    const catalogMessage = parseLines(discovered.stdout).find((m) => m.type === 'CATALOG') as { catalog: { streams: Stream[] } };
    const streams = catalogMessage.catalog.streams;
    for (const name of ['contacts', 'conversations']) {
      const props = streams.find((s) => s.name === name)?.json_schema.properties as Rec;
      expect(props[DELETED_AT], name).toMatchObject({ type: ['null', 'string'], format: 'date-time' });
    }
    const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
    const validators = new Map<string, ValidateFunction>(streams.map((s) => [s.name, ajv.compile(s.json_schema)]));
    const cursors = new Map(streams.flatMap((s) => (s.default_cursor_field?.[0] ? [[s.name, s.default_cursor_field[0]] as const] : [])));
    const configured = writeJson(dir, 'configured.json', {
      streams: streams.map((s) => {
        const incremental = s.supported_sync_modes.includes('incremental');
        return {
          stream: s,
          sync_mode: incremental ? 'incremental' : 'full_refresh',
          destination_sync_mode: incremental ? 'append_dedup' : 'overwrite',
          ...(s.default_cursor_field ? { cursor_field: s.default_cursor_field } : {}),
          primary_key: s.source_defined_primary_key,
        };
      }),
    });

    const destination = new DedupDestination(cursors);
    let state: Rec[] = [];
    let tombstones: Rec[] = [];
    const sync = async (): Promise<void> => {
      const args = ['read', '--config', config, '--catalog', configured];
      if (state.length > 0) args.push('--state', writeJson(dir, 'state.json', state));
      const run = await runCli(SOURCE_BIN, args);
      expect(run.code, run.stderr).toBe(0);
      const lastState = new Map<string, Rec>();
      tombstones = [];
      for (const m of parseLines(run.stdout)) {
        if (m.type === 'RECORD') {
          const { stream, data } = m.record as { stream: string; data: Rec };
          const validate = validators.get(stream);
          expect(validate, stream).toBeDefined();
          if (validate && !validate(data)) throw new Error(`${stream} record ${JSON.stringify(data)} breaks its schema: ${ajv.errorsText(validate.errors)}`);
          if (data[DELETED_AT] !== undefined) tombstones.push({ stream, ...data });
          destination.write(stream, data);
        } else if (m.type === 'STATE') {
          const s = m.state as { stream: { stream_descriptor: { name: string } } };
          lastState.set(s.stream.stream_descriptor.name, m.state as Rec);
        }
      }
      state = [...new Map([...state.map((s) => [(s as { stream: { stream_descriptor: { name: string } } }).stream.stream_descriptor.name, s] as const), ...lastState]).values()];
    };

    await sync();
    const ctl = account.emulator.control;
    const deletedContacts = ctl.mutate(account.accountId, { op: 'delete_contacts', count: 4 }).ids;
    const deletedConversations = ctl.mutate(account.accountId, { op: 'delete_conversations', count: 4 }).ids;
    changeRound(account);
    await sync();

    // Tombstones: one per deleted object, in its own stream, validated above.
    const tombstoned = new Set(tombstones.map((t) => t.id));
    for (const id of [...deletedContacts, ...deletedConversations]) expect(tombstoned.has(id), id).toBe(true);
    const sample = tombstones.find((t) => t.stream === 'contacts');
    expect(sample).toMatchObject({ updated_at: sample?.[DELETED_AT], name: null, email: null });

    // The destination holds exactly the live data: the deleted rows are gone.
    const dump = account.dump();
    const strip = (rows: Rec[]) => rows.map(({ [DELETED_AT]: _deleted, ...rest }) => rest);
    expect(strip(destination.rows('contacts'))).toStrictEqual(dump.contacts);
    expect(strip(destination.rows('conversations'))).toStrictEqual(dump.conversations);
    const ids = new Set(destination.rows('contacts').map((r) => r.id));
    for (const id of deletedContacts) expect(ids.has(id)).toBe(false);
  });

  it('reports deletion records of an unknown object_type once, and emits no tombstone for them', async () => {
    const config = account.config(dir, { deletions_as_tombstones: true });
    const catalog = writeJson(dir, 'deletions-only.json', {
      streams: ['contacts', 'deletions'].map((name) => ({ stream: { name }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' })),
    });
    account.emulator.control.setFaults([{ kind: 'unknown_object_type', every: 1, paths: ['/v1/deletions'] }]);
    try {
      const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog]);
      expect(run.code, run.stderr).toBe(0);
      const logs = parseLines(run.stdout).filter((m) => m.type === 'LOG').map((m) => (m.log as { message: string }).message);
      const warnings = logs.filter((l) => l.includes('object_type the connector does not know'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/"widget": \d+/);
      const widgetIds = new Set(parseLines(run.stdout).flatMap((m) => {
        const r = m.record as { stream: string; data: Rec } | undefined;
        return m.type === 'RECORD' && r?.stream === 'deletions' && r.data.object_type === 'widget' ? [r.data.object_id] : [];
      }));
      expect(widgetIds.size).toBeGreaterThan(0);
      const contactIds = parseLines(run.stdout).flatMap((m) => {
        const r = m.record as { stream: string; data: Rec } | undefined;
        return m.type === 'RECORD' && r?.stream === 'contacts' ? [r.data.id] : [];
      });
      for (const id of widgetIds) expect(contactIds).not.toContain(id);
    } finally {
      account.emulator.control.clearFaults();
    }
  });
});
