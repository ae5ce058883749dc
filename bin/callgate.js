#!/usr/bin/env node
// The operator CLI. dist/ is compiled from src/ by `npm install` (the prepare script) or `npm run build`.
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(main)) {
  await import(main.href);
} else {
  process.stderr.write('callgate: the CLI is not built yet; run "npm install" or "npm run build" first\n');
  process.exitCode = 1;
}
