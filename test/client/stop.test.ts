/**
 * The run's stop (ClientOptions.signal, aborted by SIGTERM/SIGINT through
 * src/process/interrupt.ts): the request in flight is aborted and a wait
 * ends at once; nothing is sent after it, and every request never settles,
 * so nothing after the stop is reported. Real timers: the wait is a short one.
 */
import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE, JSON_HEADERS, harness, page } from './helpers.js';

afterEach(() => nock.cleanAll());

/** Whether `p` settled (either way) within `ms`. */
async function settles(p: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return done;
}

describe('a client stopped through its signal', () => {
  it('aborts the request in flight; it and every later request never settle, and none is sent', async () => {
    const stop = new AbortController();
    const slow = nock(BASE).get('/v1/contacts').query(true).delay(5_000).reply(200, page(), JSON_HEADERS);
    const later = nock(BASE).get('/v1/conversations').query(true).reply(200, page(), JSON_HEADERS);
    const { client, logs } = harness({ signal: stop.signal }, false);
    const inFlight = client.list('/v1/contacts', { limit: 5 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(slow.isDone()).toBe(true);
    stop.abort();
    expect(await settles(inFlight, 100)).toBe(false);
    expect(await settles(client.list('/v1/conversations', { limit: 5 }), 100)).toBe(false);
    expect(later.isDone()).toBe(false);
    expect(logs).toEqual([]);
    await client.close();
  });

  it('ends a rate-limit wait at once: the retry it waited for is never sent', async () => {
    const stop = new AbortController();
    nock(BASE).get('/v1/contacts').query(true).reply(429, { title: 'Too Many Requests', status: 429 }, { 'content-type': 'application/problem+json', 'retry-after': '1' });
    const retry = nock(BASE).get('/v1/contacts').query(true).reply(200, page(), JSON_HEADERS);
    const { client } = harness({ signal: stop.signal }, false);
    const waiting = client.list('/v1/contacts', { limit: 5 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop.abort();
    // Past the 1 s the service asked for: a wait that had not ended would have sent the retry by now.
    expect(await settles(waiting, 1_300)).toBe(false);
    expect(retry.isDone()).toBe(false);
    await client.close();
  });

  it('close() ends a rate-limit wait at once: the request fails as closed, its retry never sent', async () => {
    const limited = nock(BASE).get('/v1/contacts').query(true).reply(429, { title: 'Too Many Requests', status: 429 }, { 'content-type': 'application/problem+json', 'retry-after': '1' });
    const retry = nock(BASE).get('/v1/contacts').query(true).reply(200, page(), JSON_HEADERS);
    const { client } = harness({}, false);
    const waiting = client.list('/v1/contacts', { limit: 5 });
    // Once the 429 is answered: the close comes during the wait it asked for, not before the request.
    while (!limited.isDone()) await new Promise((resolve) => setTimeout(resolve, 5));
    await client.close();
    await expect(waiting).rejects.toThrow('The Data-Read API client was closed while a request was pending.');
    expect(retry.isDone()).toBe(false);
  });

  it('without a stop, the same requests are answered', async () => {
    nock(BASE).get('/v1/contacts').query(true).reply(200, page(), JSON_HEADERS);
    const { client } = harness({ signal: new AbortController().signal }, false);
    expect((await client.list('/v1/contacts', { limit: 5 })).data).toEqual([{ id: 'c1' }]);
    await client.close();
  });
});
