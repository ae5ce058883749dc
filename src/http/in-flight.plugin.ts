/**
 * Route handlers still running. Closing the HTTP server waits for open connections only: a client that
 * sent its request and then hung up leaves its handler running (placing a call, storing it) with no
 * connection to wait for. Shutdown waits for these handlers too before it closes the database, or the
 * handler's writes fail and a call the provider placed is never stored.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** Route handlers still running; shutdown waits for them before it closes the database. */
    inFlight: InFlightHandlers;
  }
}

export interface InFlightHandlers {
  /** Resolves true once no handler is running, or false when `timeoutMs` passes first. */
  idle(timeoutMs: number): Promise<boolean>;
}

const tracked = new WeakSet<FastifyRequest>();

/**
 * Counts from just before a handler runs (preHandler: the body is read and valid) to its answer (onSend,
 * which runs even when the client has gone). Requests answered before a handler runs are never counted.
 */
function trackHandlers(app: FastifyInstance): InFlightHandlers {
  let running = 0;
  let waiters: (() => void)[] = [];
  // Callback hooks, not async ones: every request runs them, and an async hook costs a promise and a turn.
  app.addHook('preHandler', (request, _reply, done) => {
    tracked.add(request);
    running++;
    done();
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (tracked.delete(request) && --running === 0) {
      for (const wake of waiters) wake();
      waiters = [];
    }
    done(null, payload);
  });
  return {
    idle(timeoutMs) {
      if (running === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}

async function inFlight(app: FastifyInstance): Promise<void> {
  app.decorate('inFlight', trackHandlers(app));
}

export default fp(inFlight, { name: 'in-flight' });
