/** The process entry of the operator CLI (bin/callgate.js imports the compiled copy): argv in, exit code out. */
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
});
