import { errorCatalogue, type ErrorCode } from './catalogue.js';

export interface ApiErrorOptions {
  /** The request field at fault, when exactly one is. */
  readonly param?: string;
  /** Extra response headers, such as `Retry-After`. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly cause?: unknown;
}

/** The one error type that reaches the HTTP edge; the error handler renders it from the catalogue. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message?: string, options: ApiErrorOptions = {}) {
    super(message ?? errorCatalogue[code].message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }
}

/** The JSON body of every error response. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  request_id: string;
  param?: string;
}
