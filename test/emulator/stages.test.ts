/** Removing and adding pipeline stages through the control API (typed and HTTP): the list serves the change at once. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../packages/emulator/src/server.js';

describe('pipeline stages through the control API', () => {
  let emu: Emulator;
  let accountId: string;
  let key: string;
  beforeAll(async () => {
    emu = await startEmulator({ host: '127.0.0.1', port: 0, seed: 5, frozenClock: true });
    accountId = emu.control.createAccount({ name: 'Stages' }).id;
    key = emu.control.createKey(accountId).key;
  });
  afterAll(async () => {
    await emu?.close();
  });

  const served = async (): Promise<{ id: string; key: string; position: number }[]> => {
    const res = await fetch(`${emu.url}/v1/pipeline_stages?limit=100`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { id: string; key: string; position: number }[] }).data;
  };

  it('removes a stage (typed API) and adds one (HTTP): /v1/pipeline_stages follows', async () => {
    const before = await served();
    expect(before.length).toBeGreaterThan(2);
    const gone = before[1] as { id: string };
    const after = emu.control.removePipelineStage(accountId, gone.id);
    expect(after.map((s) => s.id)).toEqual(before.filter((s) => s.id !== gone.id).map((s) => s.id));
    expect((await served()).map((s) => s.id)).toEqual(after.map((s) => s.id));
    expect(() => emu.control.removePipelineStage(accountId, gone.id)).toThrow(/no pipeline stage/);

    const headers = { authorization: `Bearer ${emu.controlToken}`, 'content-type': 'application/json' };
    const added = await fetch(`${emu.controlUrl}/accounts/${accountId}/pipeline-stages`, { method: 'POST', headers, body: JSON.stringify({ key: 'demo', name: 'Demo booked' }) });
    expect(added.status).toBe(201);
    const stage = (await added.json()) as { id: string; key: string; position: number };
    expect(stage.key).toBe('demo');
    expect((await served()).map((s) => s.id)).toContain(stage.id);

    const removed = await fetch(`${emu.controlUrl}/accounts/${accountId}/pipeline-stages/${stage.id}`, { method: 'DELETE', headers });
    expect(removed.status).toBe(200);
    expect((await served()).map((s) => s.id)).not.toContain(stage.id);
    expect(emu.control.dump(accountId).pipeline_stages).toHaveLength(before.length - 1);
  });
});
