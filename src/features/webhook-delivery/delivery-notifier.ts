/**
 * Wakes the dispatcher the moment an event is committed, instead of at the next sweep. In one process an
 * EventEmitter does it; on PostgreSQL, NOTIFY/LISTEN carries the wake-up to workers in other processes.
 */
import { EventEmitter } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';

export interface DeliveryNotifier {
  /** Call after a transaction that added deliveries has committed. */
  notify(): void;
  subscribe(listener: () => void): () => void;
  close(): Promise<void>;
}

const channel = 'callgate_deliveries';
const listenRetryStartMs = 1_000;
const listenRetryMaxMs = 10_000;
const listenConnectTimeoutMs = 5_000;

/**
 * Sends one wake-up to the workers of every process LISTENing on this database. For short-lived processes
 * (the CLI) that add deliveries but run no dispatcher: awaitable, so it is sent before the pool closes.
 */
export async function notifyDeliveryWorkers(pool: Pick<pg.Pool, 'query'>): Promise<void> {
  await pool.query(`NOTIFY ${channel}`);
}

export function createLocalNotifier(): DeliveryNotifier {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    notify: () => void emitter.emit('wake'),
    subscribe(listener) {
      emitter.on('wake', listener);
      return () => emitter.off('wake', listener);
    },
    close: async () => void emitter.removeAllListeners(),
  };
}

/** Local wake-ups plus PostgreSQL NOTIFY to other processes, and LISTEN when someone subscribes. */
export function createPostgresNotifier(pool: pg.Pool, connectionString: string, logger: FastifyBaseLogger): DeliveryNotifier {
  const local = createLocalNotifier();
  let listener: pg.Client | undefined;
  let closed = false;
  let notifyTimer: NodeJS.Timeout | undefined;
  const sendNotify = () => {
    notifyTimer = undefined;
    notifyDeliveryWorkers(pool).catch((error: unknown) => logger.warn({ err: error }, 'NOTIFY failed'));
  };

  /** Reconnect attempts back off from 1 s to 10 s while the database stays away. */
  let retryMs = listenRetryStartMs;
  let lostAt: number | undefined;
  const retryLater = () => {
    if (closed) return;
    // Unref'd like every worker timer: the worker role keeps the process alive (container.ts), not this.
    setTimeout(() => void listen().catch(() => undefined), retryMs).unref();
    retryMs = Math.min(listenRetryMaxMs, retryMs * 2);
  };

  const listen = async () => {
    if (closed || listener) return;
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: listenConnectTimeoutMs, keepAlive: true });
    listener = client;
    client.on('notification', () => local.notify());
    client.on('error', (error) => {
      if (listener !== client) return;
      logger.warn({ err: error }, 'webhook wake-up listener lost its connection; reconnecting');
      lostAt ??= Date.now();
      listener = undefined;
      client.end().catch(() => undefined);
      retryLater();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
      retryMs = listenRetryStartMs;
      if (lostAt !== undefined) {
        logger.info({ downMs: Date.now() - lostAt }, 'webhook wake-up listener is connected again');
        lostAt = undefined;
        // NOTIFYs sent while we were away are lost: look for due deliveries now rather than at the next sweep.
        local.notify();
      }
    } catch (error) {
      if (listener !== client) return;
      listener = undefined;
      lostAt ??= Date.now();
      await client.end().catch(() => undefined);
      logger.warn(
        { err: error, retryInMs: retryMs },
        'could not LISTEN for webhook wake-ups; the periodic sweep still delivers; trying again',
      );
      retryLater();
    }
  };

  return {
    notify() {
      local.notify();
      // Events committed within the same few milliseconds share one NOTIFY, sent after the last of them.
      if (closed || notifyTimer) return;
      notifyTimer = setTimeout(sendNotify, 2);
    },
    subscribe(callback) {
      void listen();
      return local.subscribe(callback);
    },
    async close() {
      closed = true;
      if (notifyTimer) {
        clearTimeout(notifyTimer);
        sendNotify();
      }
      await local.close();
      if (listener) await listener.end().catch(() => undefined);
      listener = undefined;
    },
  };
}
