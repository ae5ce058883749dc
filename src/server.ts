/**
 * The process: read the config, open the database, seed a demo on first start, serve HTTP, run the worker's
 * jobs, and close it all in order on SIGTERM or SIGINT.
 */
import { buildApp } from './app.js';
import { ConfigError, loadConfig, withDotEnv, type Config } from './config.js';
import { createServices } from './container.js';
import { cliSettingsFor, demoBanner, findDemoAccount, seedDemoIfEmpty, startLine } from './features/bootstrap/demo-seed.js';
import { buildMetricsApp } from './features/metrics/metrics.server.js';
import { providerSettingNotes } from './features/providers/provider-catalogue.js';

/** Shutdown gives in-flight requests this long before the process exits anyway. */
const shutdownGraceMs = 10_000;
/** The worker's grace ends this long before the forced exit, so that it can still release its claims. */
const releaseMarginMs = 1_500;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(withDotEnv(process.env));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`callgate: configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  const services = await createServices(config);
  const { logger } = services;

  // A provider without its key, or whose webhooks cannot be verified: said once, as the catalogue words it.
  for (const note of providerSettingNotes(config)) logger[note.level](note.message);
  const runsApi = config.roles.has('api');
  const runsWorker = config.roles.has('worker');
  const app = runsApi ? buildApp(services) : undefined;
  // The worker role runs every job: the call monitor, the webhook dispatcher, the batch dialer and the purges.
  if (runsWorker) {
    services.startWorker();
    // The jobs' timers are unref'd (so tests and the CLI can end), and a worker-only process has no listening
    // socket: with its database connections gone, nothing would keep it running and it would exit 0
    // mid-outage. This timer keeps the process alive until shutdown ends it.
    setInterval(() => undefined, 60 * 60 * 1000);
  }

  if (app) await app.listen({ port: config.port, host: config.host });
  // Its own port, in any role: a worker-only process is scraped and probed there.
  const metricsApp = config.metricsPort === undefined ? undefined : buildMetricsApp(services);
  if (metricsApp) await metricsApp.listen({ port: config.metricsPort, host: config.host });
  // Handled before the server says it runs: a SIGTERM right after that line (a deploy, a test) must still
  // shut down gracefully, not meet Node's default and end the process mid-start.
  let closing = false;
  /** The steps after listening (the demo seed, the lines that say the server runs): a shutdown waits for them. */
  let starting: Promise<void> = Promise.resolve();
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const forceAt = Date.now() + shutdownGraceMs;
    const force = setTimeout(() => process.exit(1), shutdownGraceMs);
    force.unref();
    // Stop taking requests first, then let the worker finish or release its deliveries. A delivery that
    // outlasts the grace is released before the forced exit, or it would stay claimed until its lease ends.
    // A handler whose client hung up is not waited for by close(): it still runs, and may have a placed call
    // to store, so the database stays open until it ends (within the grace).
    starting
      .catch(() => undefined)
      .then(() => app?.close().then(() => app.inFlight.idle(Math.max(0, forceAt - releaseMarginMs - Date.now()))))
      .then(() => services.close(Math.max(0, forceAt - releaseMarginMs - Date.now())))
      .then(() => metricsApp?.close())
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  starting = announce();
  await starting;

  async function announce(): Promise<void> {
    // Seeded only once the ports are ours: the demo key is printed once, and a start that failed to listen
    // (a port in use) would take it along, leaving the next start an account without a key.
    const seed = config.demoSeed ? await seedDemoIfEmpty(services.db, services.clock) : null;
    // Printed, not logged: the demo token is shown once, like any new key, and kept out of log files.
    if (seed) process.stdout.write(`${demoBanner(seed, config.publicUrl, cliSettingsFor(config))}\n`);
    // A worker alone listens on nothing, so it names no URL.
    logger.info(
      {
        database: services.database.dialect,
        roles: [...config.roles],
        ...(app ? { url: config.publicUrl } : {}),
        ...(metricsApp ? { metricsPort: config.metricsPort } : {}),
      },
      'callgate is running',
    );
    if (app) {
      const demoAccountId = seed?.accountId ?? (await findDemoAccount(services.db));
      const demo = demoAccountId === undefined ? undefined : { accountId: demoAccountId, keyPrinted: seed !== null };
      process.stdout.write(`${startLine(config.publicUrl, demo, cliSettingsFor(config))}\n`);
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`callgate: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
