/**
 * A TCP proxy in front of the shared PostgreSQL server, to cut a process's database connections without
 * touching the server: `dropAll()` destroys every socket pair (as a network fault or a restarted server
 * would), `pause()` refuses new connections until `resume()` (the database away, then back).
 */
import net from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlThrough(url: string): string;
  /** Socket pairs open now. */
  readonly connections: number;
  /** Connections accepted (and forwarded) so far. */
  readonly accepted: number;
  /** Destroys every open socket pair, both sides at once. */
  dropAll(): void;
  /** New connections are refused (accepted and closed at once, as a server that is down) until `resume`. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number } = { host: '127.0.0.1', port: 5432 }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let paused = false;
  let accepted = 0;
  const server = net.createServer((client) => {
    if (paused) {
      // A reset rather than a clean close, as a connection refused by a server that is down.
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  const proxy: TcpProxy = {
    port,
    urlThrough(url) {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    get connections() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    dropAll() {
      for (const { client, upstream } of [...pairs]) {
        // A reset towards the process, as a network fault gives (ECONNRESET or "Connection terminated"),
        // unless the socket already ended its side: libuv refuses a reset after a shutdown (EINVAL), and
        // Node then leaves the handle "closing" forever, so the test process spins at exit and never ends.
        if (client.writableEnded) client.destroy();
        else client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
    },
    close() {
      proxy.dropAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
