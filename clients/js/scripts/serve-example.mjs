// `npm run example:browser`: serves this package's folder (the page is examples/browser/, the
// client /src/, supabase-js from /node_modules/) on 127.0.0.1, and the page's config.json from
// the local stack's values (.parley/client.env, written by `python3 dev.py run`; PARLEY_CLIENT_ENV:
// another file). PORT picks the port (default 5173; 0: any free one). It prints the page's URL.

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, normalize } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const settings = process.env.PARLEY_CLIENT_ENV ?? new URL('../../../.parley/client.env', import.meta.url).pathname;
if (existsSync(settings)) process.loadEnvFile(settings);
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json', '.css': 'text/css' };
const config = {
  supabaseUrl: process.env.SUPABASE_URL, supabaseAnonKey: process.env.SUPABASE_ANON_KEY,
  chat: process.env.PARLEY_CHAT_URL, planner: process.env.PARLEY_PLANNER_URL,
  email: process.env.PARLEY_EMAIL, password: process.env.PARLEY_PASSWORD,
  demoMessage: 'Plan my week: list my tasks and my calendar, then delete the first calendar event',
};
if (!config.supabaseUrl) throw new Error(`no settings: start the local stack (python3 dev.py run), which writes ${settings}`);

const server = createServer(async (request, response) => {
  const path = normalize(decodeURIComponent(new URL(request.url, 'http://x').pathname));
  if (path === '/examples/browser/config.json') return send(response, 200, '.json', JSON.stringify(config));
  if (path.includes('..') || !/^\/(src|node_modules\/@supabase|examples\/browser)\//.test(path)) return send(response, 404, '.txt', 'not found');
  try {
    send(response, 200, extname(path), await readFile(root + path.slice(1)));
  } catch {
    send(response, 404, '.txt', 'not found');
  }
});

function send(response, status, type, body) {
  response.writeHead(status, { 'content-type': TYPES[type] ?? 'text/plain' });
  response.end(body);
}

server.listen(Number(process.env.PORT ?? 5173), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/examples/browser/index.html`);
});
