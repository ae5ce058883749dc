/**
 * An HTTP server on a loopback port for the fakes and receivers: it can stop (connections then refused, open
 * ones cut) and start again on the same port, as an outside service that goes away and comes back.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface LocalServer {
  readonly port: number;
  /** Stops listening and destroys the open connections. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
}

export async function startLocalServer(handler: http.RequestListener): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  let server: http.Server;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = http.createServer(handler);
      server.on('connection', (socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  return {
    port,
    stop: async () => {
      await new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      // A client in this process hears of its cut connections a turn of the event loop later: only then is a
      // new request refused (not sent over a dead keep-alive connection, which would be a dropped answer).
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
    },
    restart: async () => void (await listen(port)),
  };
}
