#!/usr/bin/env node
// The operator CLI. dist/ is compiled from src/ by `npm install` (the prepare script) or `npm run build`.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/bin.js', import.meta.url);
if (existsSync(entry)) {
  await import(entry.href);
} else {
  process.stderr.write('callgate: the CLI is not built yet; run "npm install" or "npm run build" first\n');
  process.exitCode = 1;
}
