/**
 * The merge rules, one by one: added, removed, conflicting types (the built-in
 * wins for the key and the cursor, the service for the rest), nullability,
 * formats and enums; and merged schemas that the protocol checkers accept.
 */
import { describe, expect, it } from 'vitest';
import { builtInSchema, type JsonSchema } from '../../src/schemas/json-schema.js';
import { mergeStreamSchema, typeText, withNull } from '../../src/schemas/schema-merge.js';
import type { DescribedStream } from '../../src/schemas/service-description.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';

function stream(name: string): StreamDefinition {
  const s = findStream(name);
  if (s === undefined) throw new Error(`no stream ${name}`);
  return s;
}

const contacts = stream('contacts');
const builtIn = builtInSchema(contacts);
const builtInProps = builtIn.properties as Record<string, JsonSchema>;

/** The service describes every built-in field as built in, then applies `change`. */
function described(change: (props: Map<string, JsonSchema>) => void, untyped: string[] = []): DescribedStream {
  const props = new Map(Object.entries(structuredClone(builtInProps)));
  change(props);
  return { properties: props, untyped };
}

const propsOf = (schema: JsonSchema): Record<string, JsonSchema> => schema.properties as Record<string, JsonSchema>;

describe('mergeStreamSchema', () => {
  it('the same description: the built-in schema, nothing added, missing or in conflict', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described(() => undefined));
    expect(merge.schema).toEqual(builtIn);
    expect([merge.added, merge.missing, merge.conflicts, merge.untyped]).toEqual([[], [], [], []]);
  });

  it('added: a field only the service describes is declared as described, after the built-in fields', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => {
      p.set('lifetime_value', { type: 'integer', description: 'Lifetime value in cents' });
      p.set('tier', { type: ['null', 'string'], enum: ['gold', 'silver', null] });
    }));
    expect(merge.added).toEqual(['lifetime_value', 'tier']);
    const props = propsOf(merge.schema);
    expect(Object.keys(props).slice(-2)).toEqual(['lifetime_value', 'tier']);
    expect(props.lifetime_value).toEqual({ type: 'integer', description: 'Lifetime value in cents' });
    expect(props.tier).toEqual({ type: ['null', 'string'], enum: ['gold', 'silver', null] });
    expect(merge.schema.required).toEqual(['id', 'updated_at']);
  });

  it('removed: a built-in field the service no longer describes is kept, nullable, and named', () => {
    const stages = stream('stage_events');
    const own = builtInSchema(stages);
    // contact_id is non-null built in (the API description says so); the service drops it, and pipeline_id.
    const merge = mergeStreamSchema(stages, own, {
      properties: new Map(Object.entries(propsOf(own)).filter(([name]) => name !== 'contact_id' && name !== 'pipeline_id')),
      untyped: [],
    });
    expect(merge.missing).toEqual(['contact_id', 'pipeline_id']);
    expect(propsOf(merge.schema).contact_id).toEqual({ ...propsOf(own).contact_id, type: ['null', 'string'] });
    expect(propsOf(merge.schema).pipeline_id).toEqual(propsOf(own).pipeline_id);
    expect(Object.keys(propsOf(merge.schema))).toEqual(Object.keys(propsOf(own)));
  });

  it('removed: the key and the cursor, when the service stops describing them, stay non-null and required', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => {
      p.delete('id');
      p.delete('updated_at');
    }));
    expect(merge.missing).toEqual(['id', 'updated_at']);
    expect(propsOf(merge.schema).id).toEqual(builtInProps.id);
    expect(propsOf(merge.schema).updated_at).toEqual(builtInProps.updated_at);
    expect(merge.schema.required).toEqual(['id', 'updated_at']);
  });

  it('conflict on the key and the cursor: the built-in type wins, and the conflict is reported', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => {
      p.set('id', { type: ['null', 'integer'], description: 'Numeric id' });
      p.set('updated_at', { type: 'string', format: 'date', description: 'Day of the last change' });
    }));
    expect(merge.conflicts).toEqual([
      { field: 'id', builtIn: 'string', service: 'integer or null', kept: 'built-in', role: 'primary key' },
      { field: 'updated_at', builtIn: 'string (date-time)', service: 'string (date)', kept: 'built-in', role: 'cursor' },
    ]);
    // Typed as the connector needs them; only the description is the service's.
    expect(propsOf(merge.schema).id).toEqual({ type: 'string', description: 'Numeric id' });
    expect(propsOf(merge.schema).updated_at).toEqual({ type: 'string', description: 'Day of the last change', format: 'date-time' });
  });

  it('conflict on any other field: the service\'s type wins (nullable, as built in), and the conflict is reported', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => {
      p.set('qualification_score', { type: 'number', description: 'Score, now with decimals' });
      p.set('won_at', { type: 'string', format: 'date' });
    }));
    expect(merge.conflicts).toEqual([
      { field: 'qualification_score', builtIn: 'integer or null', service: 'number', kept: 'service' },
      { field: 'won_at', builtIn: 'string (date-time) or null', service: 'string (date)', kept: 'service' },
    ]);
    expect(propsOf(merge.schema).qualification_score).toEqual({ type: ['null', 'number'], description: 'Score, now with decimals' });
    expect(propsOf(merge.schema).won_at).toEqual({ type: ['null', 'string'], description: builtInProps.won_at?.description, format: 'date' });
  });

  it('no conflict: the service adds an enum and a description; a format it leaves out is kept; null stays allowed where either allows it', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => {
      p.set('temperature', { type: 'string', enum: ['hot', 'warm', 'cold'], description: 'Propensity' });
      p.set('won_at', { type: 'string' });
    }));
    expect(merge.conflicts).toEqual([]);
    expect(propsOf(merge.schema).temperature).toEqual({ type: ['null', 'string'], description: 'Propensity', enum: ['hot', 'warm', 'cold', null] });
    expect(propsOf(merge.schema).won_at).toEqual(builtInProps.won_at);
  });

  it('a field the service lists without a readable type: kept as built in, not reported missing; an untyped new field is named', () => {
    const merge = mergeStreamSchema(contacts, builtIn, described((p) => p.delete('email'), ['email', 'blob']));
    expect(merge.missing).toEqual([]);
    expect(propsOf(merge.schema).email).toEqual(builtInProps.email);
    expect(merge.untyped).toEqual(['blob']);
    expect(propsOf(merge.schema)).not.toHaveProperty('blob');
  });

  it('pipeline_stages: the emulator\'s description adds its fields to the open schema', () => {
    const stages = stream('pipeline_stages');
    const merge = mergeStreamSchema(stages, builtInSchema(stages), {
      properties: new Map<string, JsonSchema>([
        ['id', { type: 'string' }],
        ['name', { type: 'string', description: 'Display name' }],
        ['position', { type: 'integer' }],
      ]),
      untyped: [],
    });
    expect(merge.added).toEqual(['name', 'position']);
    expect(merge.schema.additionalProperties).toBe(true);
  });
});

describe('helpers', () => {
  it('typeText and withNull', () => {
    expect(typeText({ type: ['null', 'string'], format: 'date-time' })).toBe('string (date-time) or null');
    expect(typeText({ type: ['integer', 'string'] })).toBe('integer or string');
    expect(withNull({ type: 'string', enum: ['a'] })).toEqual({ type: ['null', 'string'], enum: ['a', null] });
    expect(withNull({ type: ['null', 'string'] })).toEqual({ type: ['null', 'string'] });
  });
});
