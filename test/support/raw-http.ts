/** HTTP over a raw socket, for requests no client library would send (and answers Node writes itself). */
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function parseResponse(text: string): RawResponse {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no HTTP response: ${JSON.stringify(text)}`);
  const [statusLine = '', ...headerLines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) };
}

/** Writes raw bytes and reads until the server closes the connection (the request must ask it to). */
export function rawRequest(port: number, request: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error('the server did not answer and close within 5 s')), 5_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parseResponse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    socket.write(request);
  });
}
