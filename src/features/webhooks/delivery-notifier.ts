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

  const listen = async () => {
    if (closed || listener) return;
    const client = new pg.Client({ connectionString });
    listener = client;
    client.on('notification', () => local.notify());
    client.on('error', (error) => {
      logger.warn({ err: error }, 'webhook wake-up listener lost its connection; reconnecting');
      listener = undefined;
      client.end().catch(() => undefined);
      if (!closed) setTimeout(() => void listen().catch(() => undefined), 1_000).unref();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (error) {
      listener = undefined;
      await client.end().catch(() => undefined);
      logger.warn({ err: error }, 'could not LISTEN for webhook wake-ups; the periodic sweep still delivers');
      if (!closed) setTimeout(() => void listen().catch(() => undefined), 1_000).unref();
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
