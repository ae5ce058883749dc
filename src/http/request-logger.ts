/**
 * `request.log`: pino's child logger with the request's id (`reqId`), made the first time the request
 * logs through it. Most requests never do (their one line, the access line, is written with the id by the
 * root logger: access-log.plugin.ts), and Fastify would otherwise make a pino child for every request. What a
 * request does log comes out exactly as from the child Fastify makes, since it is that child.
 */
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type LogArgs = Parameters<FastifyBaseLogger['info']>;

class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  fatal(...args: unknown[]): void {
    this.real.fatal(...(args as LogArgs));
  }

  error(...args: unknown[]): void {
    this.real.error(...(args as LogArgs));
  }

  warn(...args: unknown[]): void {
    this.real.warn(...(args as LogArgs));
  }

  info(...args: unknown[]): void {
    this.real.info(...(args as LogArgs));
  }

  debug(...args: unknown[]): void {
    this.real.debug(...(args as LogArgs));
  }

  trace(...args: unknown[]): void {
    this.real.trace(...(args as LogArgs));
  }

  silent(...args: unknown[]): void {
    this.real.silent(...(args as LogArgs));
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new RequestLogger(logger, bindings, options);
