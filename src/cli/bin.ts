/** The process entry of the operator CLI (bin/callgate.js imports the compiled copy): argv in, exit code out. */
import { runCli } from './main.js';

// A reader that stops early (`| head -c 0`) closes the pipe: the output is not wanted, which is no crash.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

process.exitCode = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
});
