/**
 * Throughput of the emulator: seed 100k contacts, then read every page of
 * /v1/contacts and /v1/conversations (limit=200) over loopback with undici,
 * and print records/s.
 *
 *   node packages/emulator/bench/emulator.ts [contacts]   (Node 24; the connector built: npm run build)
 *
 * The emulator runs in a child process, so client and server do not share a
 * core; besides wall-clock records/s the bench prints records per second of
 * the server's own CPU time ("per core"), which holds on a busy machine too.
 * Node strips the types of the .ts files itself; a resolve hook maps the
 * sources' relative `.js` imports to their `.ts` files.
 */
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if ((specifier.startsWith('./') || specifier.startsWith('../')) && specifier.endsWith('.js') && context.parentURL?.startsWith('file:')) {
      const ts = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
      if (!existsSync(fileURLToPath(new URL(specifier, context.parentURL))) && existsSync(fileURLToPath(ts))) {
        return nextResolve(ts.href, context);
      }
    }
    return nextResolve(specifier, context);
  },
});

interface Ready {
  readonly url: string;
  readonly key: string;
  readonly contacts: number;
  readonly conversations: number;
  readonly stageEvents: number;
  readonly seedMs: number;
  readonly seedCpuMs: number;
}

const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;

async function serve(contacts: number): Promise<void> {
  const { startEmulator } = await import('../src/server.js');
  const emu = await startEmulator({ seed: 42, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
  const account = emu.control.createAccount({ name: 'Bench' });
  const { key } = emu.control.createKey(account.id);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const seeded = emu.control.seed(account.id, { contacts });
  const ready: Ready = {
    url: emu.url, key, contacts: seeded.contacts, conversations: seeded.conversations, stageEvents: seeded.stageEvents,
    seedMs: performance.now() - t0, seedCpuMs: cpuMs(process.cpuUsage(c0)),
  };
  process.on('message', (msg) => {
    if (msg === 'cpu') process.send?.(cpuMs(process.cpuUsage()));
    if (msg === 'stop') void emu.close().then(() => process.exit(0));
  });
  process.send?.(ready);
}

async function run(contacts: number): Promise<void> {
  const { Agent, request } = await import('undici');
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(contacts)], { stdio: 'inherit' });
  const next = <T>(): Promise<T> => new Promise((resolve) => child.once('message', (m) => resolve(m as T)));
  const ready = await next<Ready>();
  const serverCpu = async (): Promise<number> => {
    const p = next<number>();
    child.send('cpu');
    return p;
  };
  console.log(`seeded ${ready.contacts} contacts, ${ready.conversations} conversations, ${ready.stageEvents} stage events in ${ready.seedMs.toFixed(0)} ms (${ready.seedCpuMs.toFixed(0)} ms CPU)`);

  const dispatcher = new Agent({ connections: 1 });
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  async function readAll(label: string, path: string): Promise<void> {
    const cpu0 = await serverCpu();
    const start = performance.now();
    let cursor: string | null = null;
    let records = 0;
    let pages = 0;
    let bytes = 0;
    do {
      const qs: string = cursor === null ? 'limit=200' : `limit=200&cursor=${encodeURIComponent(cursor)}`;
      const res = await request(`${ready.url}${path}?${qs}`, { dispatcher, headers: { authorization: `Bearer ${ready.key}` } });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${text}`);
      bytes += Buffer.byteLength(text);
      const page = JSON.parse(text) as { data: unknown[]; next_cursor: string | null; has_more: boolean };
      records += page.data.length;
      pages++;
      cursor = page.has_more ? page.next_cursor : null;
    } while (cursor !== null);
    const ms = performance.now() - start;
    const cpu = (await serverCpu()) - cpu0;
    console.log(
      `${label}: ${records} records, ${pages} pages, ${(bytes / 1e6).toFixed(1)} MB in ${ms.toFixed(0)} ms -> ` +
      `${fmt((records / ms) * 1000)} records/s wall; server CPU ${cpu.toFixed(0)} ms -> ${fmt((records / cpu) * 1000)} records/s per core`,
    );
  }
  // The first read sorts the freshly seeded index; the next ones are steady state.
  await readAll('contacts (first read)', '/v1/contacts');
  await readAll('contacts', '/v1/contacts');
  await readAll('contacts', '/v1/contacts');
  await readAll('conversations', '/v1/conversations');
  await readAll('stage_events', '/v1/stage_events');
  await dispatcher.close();
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
}

if (process.argv[2] === '--serve') await serve(Number(process.argv[3] ?? 100_000));
else await run(Number(process.argv[2] ?? 100_000));
