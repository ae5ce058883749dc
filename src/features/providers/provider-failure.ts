import { ApiError } from '../../errors/api-error.js';
import type { ProviderFailure } from './provider.interface.js';

/**
 * A provider's failure as the one error type: its kind picks the code, and so whether a retry can help
 * (spec 4.1 rule 4: a 5xx means "retry with backoff, same key"). `message` rewords it for another reader.
 */
export function providerFailureError(failure: ProviderFailure, message = failure.message): ApiError {
  switch (failure.kind) {
    case 'rejected':
      return new ApiError('provider_error', message);
    case 'unavailable':
      return new ApiError(
        'provider_unavailable',
        message,
        failure.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: failure.retryAfterSeconds },
      );
    case 'timeout':
      return new ApiError('provider_timeout', message);
    case 'uncertain':
      return new ApiError('provider_unavailable', message);
  }
}
