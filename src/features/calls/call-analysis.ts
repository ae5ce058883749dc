import type { CallAnalysis } from '../events/call-analysis.schema.js';
import type { CallRow } from './calls.tables.js';

/**
 * An ended call's analysis as the API and its events show it: the provider's judgement (null when it made
 * none) and the collected results ({} when none, or once the retention purge deleted them).
 */
export function analysisOf(row: Pick<CallRow, 'analysis_successful' | 'analysis_data'>): CallAnalysis {
  return {
    successful: row.analysis_successful === null ? null : row.analysis_successful === 1,
    data: row.analysis_data === null ? {} : (JSON.parse(row.analysis_data) as CallAnalysis['data']),
  };
}
