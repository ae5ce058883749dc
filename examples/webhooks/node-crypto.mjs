// A callgate webhook receiver with node:crypto only (Node 18+). It verifies each request's Standard
// Webhooks signature on the raw body, checks the timestamp, and answers fast.
//
//   WEBHOOK_SECRET=whsec_... PORT=8080 node node-crypto.mjs
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const toleranceSeconds = 5 * 60;
const secret = process.env.WEBHOOK_SECRET ?? '';
if (!secret.startsWith('whsec_')) throw new Error("WEBHOOK_SECRET must be the endpoint's secret, whsec_...");
// The key is the base64-decoded part after `whsec_`, not the text itself.
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');

/** Returns the event if the headers sign exactly this body; throws otherwise. */
function verify(body, headers) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) throw new Error('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) {
    throw new Error('timestamp is more than 5 minutes away from now');
  }
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64'));
  // Several signatures, space-separated, while a secret is being rotated: one match is enough.
  const matched = signatures.split(' ').some((entry) => {
    const [version, signature = ''] = entry.split(',');
    const given = Buffer.from(signature);
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new Error('no matching signature');
  return JSON.parse(body.toString('utf8'));
}

const log = (fields) => console.log(JSON.stringify(fields));

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let event;
      try {
        event = verify(Buffer.concat(chunks), req.headers);
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
