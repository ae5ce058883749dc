/** The process entry of the operator CLI (bin/callgate.js imports the compiled copy): argv in, exit code out. */
import { ConfigError, withDotEnv } from '../config.js';
import { runCli } from './main.js';

// A reader that stops early (`| head -c 0`) closes the pipe: the output is not wanted, which is no crash.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

// The server's settings, from a .env file of the working directory too (real variables win): written once.
let env: NodeJS.ProcessEnv = process.env;
try {
  env = withDotEnv(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`callgate: configuration error: ${error.message}\n`);
  process.exit(1);
}

process.exitCode = await runCli(process.argv.slice(2), env, {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
});
