/**
 * The OpenAPI document as a file (`npm run openapi` writes docs/openapi.json, which the TypeScript client
 * generates its types from): the very app the server runs, built on a throwaway SQLite database and never
 * listening. It builds the whole app, so it sits in the shell beside app.ts, not in features/openapi.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { createServices } from './container.js';

export const openApiFile = 'docs/openapi.json';

/** The document as text: pretty-printed with a final newline, so the committed file diffs line by line. */
export async function generateOpenApiJson(): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-openapi-'));
  try {
    const config = loadConfig({ CALLGATE_DATA_DIR: dataDir, CALLGATE_LOG_LEVEL: 'silent', CALLGATE_DEMO_SEED: 'false' });
    const services = await createServices(config);
    try {
      const app = buildApp(services);
      await app.ready();
      const json = `${JSON.stringify(app.swagger(), null, 2)}\n`;
      await app.close();
      return json;
    } finally {
      await services.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
