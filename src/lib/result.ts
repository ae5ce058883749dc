/**
 * Expected failures (a provider refusing a call, a receiver timing out) are values, not exceptions:
 * callers must look at them, and each failure says whether trying again can help.
 */
export type Result<T, E> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: E };

export function ok<T>(value: T): Result<T, never> {
  return { ok: true, value };
}

export function err<E>(error: E): Result<never, E> {
  return { ok: false, error };
}
