/** The Redis the tests use (127.0.0.1:6379), and whether it answers: suites that need it skip without it. */
import net from 'node:net';

export const redisHost = '127.0.0.1';
export const redisPort = 6379;

/** Why a suite needing Redis is skipped, or false when Redis accepts a connection. */
export async function redisSkipReason(): Promise<string | false> {
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = net.connect(redisPort, redisHost);
    socket.setTimeout(1_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
  return reachable ? false : `Redis is not reachable at ${redisHost}:${redisPort}`;
}
