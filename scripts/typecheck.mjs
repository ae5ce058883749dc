#!/usr/bin/env node
// Type-checks the server (with its tests, benchmarks and scripts) and each client, two projects at a time
// (this machine has two cores): the server's project alone takes as long as the clients' together, so it
// runs beside them instead of before them. Fails when any project has an error, after printing each one's.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const lanes = [['tsconfig.json'], ['clients/typescript/tsconfig.json', 'clients/n8n/tsconfig.json', 'clients/n8n/test/tsconfig.json']];

function check(project) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, '-p', project, '--noEmit'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => {
      if (code !== 0) process.stderr.write(`tsc -p ${project}: errors\n${output}`);
      resolve(code === 0);
    });
  });
}

const results = await Promise.all(
  lanes.map(async (projects) => {
    let ok = true;
    for (const project of projects) ok = (await check(project)) && ok;
    return ok;
  }),
);
process.exit(results.every(Boolean) ? 0 : 1);
