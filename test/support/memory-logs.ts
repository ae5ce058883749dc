/** A logger that keeps every line in memory, to prove what is logged and that no secret is. */
import pino, { type Logger } from 'pino';
import { logRedactPaths } from '../../src/container.js';

export interface MemoryLogs {
  readonly logger: Logger;
  readonly lines: string[];
  text(): string;
}

/** The production logger's options (level trace, the same redaction) writing into memory. */
export function memoryLogs(): MemoryLogs {
  const lines: string[] = [];
  const logger = pino(
    { level: 'trace', redact: { paths: logRedactPaths, censor: '[redacted]' } },
    { write: (line: string) => void lines.push(line) },
  );
  return { logger, lines, text: () => lines.join('') };
}
