/**
 * A real forward proxy for the tests (node:http and node:net, 127.0.0.1, port
 * 0): CONNECT tunnels for https:// targets and absolute-form requests for
 * http:// ones, optionally behind Basic authentication (407 otherwise), and
 * optionally spoken to over TLS. It records what it saw: every CONNECT and
 * request with its target, its answer and the credentials it carried, and
 * how many tunnels were open at once.
 */
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface ProxyLogEntry {
  /** CONNECT, or the method of an absolute-form request. */
  readonly method: string;
  /** host:port of a CONNECT, the absolute URL of a request. */
  readonly target: string;
  /** What the proxy answered: 200 (tunnel open or the target's status), 407, 403, 502. */
  readonly status: number;
  /** The Proxy-Authorization header as received, if any. */
  readonly authorization: string | undefined;
  /** For absolute-form requests: the Host header received. */
  readonly host?: string | undefined;
}

export interface ForwardProxyOptions {
  /** Require `Proxy-Authorization: Basic base64(user:password)`; 407 otherwise. */
  readonly auth?: { readonly user: string; readonly password: string };
  /** Speak TLS to the client with this certificate and key. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Answer CONNECT to these host:port targets with 403. */
  readonly forbid?: readonly string[];
}

export interface ForwardProxy {
  /** http://127.0.0.1:PORT (https:// with the tls option), without credentials. */
  readonly url: string;
  readonly port: number;
  /** Everything it was asked, in order. */
  readonly log: ProxyLogEntry[];
  /** Most CONNECT tunnels open at once. */
  readonly maxOpenTunnels: number;
  /** CONNECT tunnels opened (what goes through them is TLS, unseen). */
  readonly tunnels: number;
  close(): Promise<void>;
}

/** A port on 127.0.0.1 where nothing listens (a proxy that is down). */
export async function closedPort(): Promise<number> {
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startForwardProxy(options: ForwardProxyOptions = {}): Promise<ForwardProxy> {
  const log: ProxyLogEntry[] = [];
  const sockets = new Set<Duplex>();
  let open = 0;
  let maxOpen = 0;
  let tunnels = 0;
  const expected = options.auth === undefined ? undefined : `Basic ${Buffer.from(`${options.auth.user}:${options.auth.password}`).toString('base64')}`;
  const authorized = (req: IncomingMessage): boolean => expected === undefined || req.headers['proxy-authorization'] === expected;
  const track = (s: Duplex): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };

  const onConnect = (req: IncomingMessage, client: Duplex, head: Buffer): void => {
    track(client);
    client.on('error', () => undefined);
    const target = req.url ?? '';
    const entry = (status: number): void => {
      log.push({ method: 'CONNECT', target, status, authorization: req.headers['proxy-authorization'] });
    };
    if (!authorized(req)) {
      entry(407);
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test proxy"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (options.forbid?.includes(target)) {
      entry(403);
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const colon = target.lastIndexOf(':');
    const upstream: Socket = connect(Number(target.slice(colon + 1)), target.slice(0, colon).replace(/^\[|\]$/g, ''));
    track(upstream);
    let connected = false;
    upstream.once('error', () => {
      if (!connected) {
        entry(502);
        client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      } else client.destroy();
    });
    upstream.once('connect', () => {
      connected = true;
      entry(200);
      tunnels += 1;
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      upstream.once('close', () => {
        open -= 1;
        client.destroy();
      });
      client.once('close', () => upstream.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const target = req.url ?? '';
    const entry = (status: number): void => {
      log.push({ method: req.method ?? 'GET', target, status, authorization: req.headers['proxy-authorization'], host: req.headers.host });
    };
    if (!/^http:\/\//.test(target)) {
      entry(400);
      res.writeHead(400).end('absolute-form only');
      return;
    }
    if (!authorized(req)) {
      entry(407);
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test proxy"', 'content-length': '0' }).end();
      return;
    }
    const url = new URL(target);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const upstream = httpRequest({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: req.method, headers }, (answer) => {
      entry(answer.statusCode ?? 0);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) {
        entry(502);
        res.writeHead(502).end();
      } else res.destroy();
    });
    req.pipe(upstream);
  };

  const server: Server = options.tls === undefined ? createHttpServer({ keepAlive: true }) : createHttpsServer({ keepAlive: true, ...options.tls });
  server.on('connect', onConnect);
  server.on('request', onRequest);
  server.on('connection', (s: Socket) => track(s));
  server.on('secureConnection', (s: Socket) => track(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    port,
    log,
    get maxOpenTunnels() {
      return maxOpen;
    },
    get tunnels() {
      return tunnels;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
