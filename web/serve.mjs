// A small static file server for the lesson: serves this folder (web/) on
// 127.0.0.1 only. `npm start` runs it; the browser tests import startServer.
//
//   node web/serve.mjs [--port 8080]
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB_ROOT = fileURLToPath(new URL('.', import.meta.url));

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Start serving `root` on 127.0.0.1.
 * @param {{root?: string, port?: number, headers?: (path: string) => object}} options
 *   port 0 picks a free port; `headers` may add response headers per path
 *   (the tests use it for CSP and CORS pages).
 * @returns {Promise<{url: string, port: number, close: () => Promise<void>}>}
 */
export async function startServer({ root = WEB_ROOT, port = 0, headers } = {}) {
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      let file = normalize(join(root, path));
      if (file !== normalize(root) && !file.startsWith(normalize(root + sep))) {
        res.writeHead(403).end('forbidden');
        return;
      }
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, {
        'content-type': MIME[extname(file)] || 'application/octet-stream',
        'cache-control': 'no-cache',
        ...(headers ? headers(path) : {}),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const actual = server.address().port;
  return {
    url: `http://127.0.0.1:${actual}/`,
    port: actual,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--port');
  const given = i > 0 ? process.argv[i + 1] : process.env.PORT || '8080';
  const port = Number(given);
  if (!/^\d+$/.test(String(given)) || port > 65535) {
    console.error(`serve.mjs: the port must be a whole number from 0 to 65535 (got ${JSON.stringify(given ?? '')}).`);
    process.exit(1);
  }
  let server;
  try {
    server = await startServer({ port });
  } catch (err) {
    if (err.code !== 'EADDRINUSE') throw err;
    console.log(`Port ${port} is busy; using a free port instead (choose one with --port N, or PORT=N npm start).`);
    server = await startServer({ port: 0 });
  }
  console.log(`attention-lab is being served at ${server.url}`);
  console.log('Open that address in a browser. Press Ctrl+C to stop.');
}
