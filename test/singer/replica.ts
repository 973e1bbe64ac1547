/**
 * A minimal Singer target for the tests: applies a tap's stdout as upserts
 * keyed by each stream's key_properties (a RECORD with `_sdc_deleted_at` set
 * deletes its row), then deletions from the `deletions` stream.
 */
type Row = Record<string, unknown>;

export interface SingerStateValue {
  bookmarks: Record<string, Record<string, unknown>>;
  currently_syncing: string | null;
}

export class SingerReplica {
  readonly tables = new Map<string, Map<string, Row>>();
  private readonly keys = new Map<string, string[]>();

  private table(stream: string): Map<string, Row> {
    let t = this.tables.get(stream);
    if (!t) this.tables.set(stream, (t = new Map()));
    return t;
  }

  /** Apply one run's stdout; returns the value of its last STATE. */
  apply(stdout: string): SingerStateValue | undefined {
    let state: SingerStateValue | undefined;
    for (const line of stdout.split('\n')) {
      if (line === '') continue;
      const m = JSON.parse(line) as { type: string; stream: string; record: Row; key_properties: string[]; value: SingerStateValue };
      if (m.type === 'SCHEMA') {
        this.keys.set(m.stream, m.key_properties);
        this.table(m.stream);
      } else if (m.type === 'RECORD') {
        const keys = this.keys.get(m.stream);
        if (!keys) throw new Error(`RECORD of ${m.stream} before its SCHEMA`);
        const key = keys.map((k) => String(m.record[k])).join('|');
        if (m.record._sdc_deleted_at != null) this.table(m.stream).delete(key);
        else this.table(m.stream).set(key, m.record);
      } else if (m.type === 'STATE') {
        state = m.value;
      }
    }
    return state;
  }

  /** Remove every object named by the replicated deletion log. */
  applyDeletions(): void {
    for (const deletion of this.table('deletions').values()) {
      const id = String(deletion.object_id);
      this.table('contacts').delete(id);
      this.table('conversations').delete(id);
    }
  }

  /** A stream's rows sorted by id, as the emulator's dump lists them. */
  rows(stream: string): Row[] {
    return [...this.table(stream).values()].sort((a, b) => (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0));
  }
}
