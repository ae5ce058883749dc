// A callgate webhook receiver with the `standardwebhooks` package (npm install standardwebhooks). The
// library checks the signature (any of several during a secret rotation) and the 5-minute timestamp window.
//
//   WEBHOOK_SECRET=whsec_... PORT=8080 node node-standardwebhooks.mjs
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.WEBHOOK_SECRET ?? ''); // takes the secret as shown, whsec_...

const log = (fields) => console.log(JSON.stringify(fields));

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let event;
      try {
        // The raw body, exactly as received: parsed and re-serialised JSON would not verify.
        event = webhook.verify(Buffer.concat(chunks).toString('utf8'), req.headers);
      } catch (error) {
        log({ verified: false, error: error.message });
        res.writeHead(400).end();
        return;
      }
      log({ verified: true, id: event.id, type: event.type });
      // Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
      res.writeHead(204).end();
    });
  })
  .listen(Number(process.env.PORT ?? 8080));
