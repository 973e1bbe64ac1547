/**
 * The benchmark serves records rendered by bench/records.ts, a hand-written
 * copy of the record shapes: each must be a record of its stream's zod schema
 * (src/schemas/resources.ts), with every declared field and no other, so the
 * bench measures what the service really sends.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { GENERATORS, PAGE_SLOT, prng } from '../../bench/records.js';
import { STREAMS, findStreamByPath } from '../../src/streams.js';

describe('bench/records.ts against the zod schemas', () => {
  it('renders every incremental stream', () => {
    expect(Object.keys(GENERATORS).sort()).toEqual(STREAMS.filter((s) => s.cursorField !== null).map((s) => s.path).sort());
  });

  it.each(Object.keys(GENERATORS))('%s: valid records with every declared field, no other', (path) => {
    const stream = findStreamByPath(path);
    const generate = GENERATORS[path];
    if (stream === undefined || generate === undefined) throw new Error(`${path} is not a stream's path`);
    const declared = Object.keys((stream.schema as z.ZodObject).shape).sort();
    const random = prng(7);
    for (let i = 0; i < 500; i++) {
      // The server writes the page number into the id's slot.
      const record = generate(random, i);
      const served = { ...record, id: String(record.id).replace('P'.repeat(PAGE_SLOT), (i % 97).toString(16).padStart(PAGE_SLOT, '0')) };
      const parsed = stream.schema.safeParse(served);
      expect(parsed.error?.issues ?? [], `${path} record ${i}`).toEqual([]);
      expect(Object.keys(record).sort(), `${path} record ${i}`).toEqual(declared);
    }
  });
});
