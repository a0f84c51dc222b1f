// The TypeScript example of the READMEs (examples/send_watch_approve.ts), run as it is against
// the local stack: it signs the demo user in with Supabase Auth (the stack's twin), sends, watches
// the turn pause for approval, approves, and sees it complete.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import ts from 'typescript';
import { parleyFor, skip, stack } from './helpers.js';

const EXAMPLE = new URL('../../examples/send_watch_approve.ts', import.meta.url);
const RUN = new URL('./.send_watch_approve.mjs', import.meta.url); // beside the package's node_modules

/** The example as JavaScript, after a prelude that gives it what it declares. */
async function runnable() {
  const source = await readFile(EXAMPLE, 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const given = {
    SUPABASE_URL: stack.supabaseUrl, SUPABASE_ANON_KEY: stack.anonKey, CHAT_URL: stack.chat,
    PLANNER_URL: stack.planner, EMAIL: stack.demoEmail, PASSWORD: stack.demoPassword,
  };
  const prelude = [
    "import WebSocket from 'ws';",
    'globalThis.WebSocket ??= WebSocket; // Node 20 has none of its own',
    `Object.assign(globalThis, ${JSON.stringify(given)});`,
  ].join('\n');
  return `${prelude}\n${outputText}`;
}

/** Run it until it prints its result line (supabase-js's timers would keep it alive). */
function run(path) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const result = out.split('\n').find((line) => /^(completed|failed|cancelled): /.test(line));
      if (result) {
        child.kill();
        resolve({ out, result });
      }
    });
    child.stderr.on('data', (chunk) => { err += chunk; });
    child.on('exit', (code) => reject(new Error(`the example exited (${code}) without its result:\n${out}\n${err}`)));
  });
}

test('the README\'s TypeScript example signs in, sends, watches, approves, and the turn completes', { skip }, async (t) => {
  await writeFile(RUN, await runnable());
  t.after(() => rm(RUN, { force: true }));
  const { out, result } = await run(RUN.pathname);
  assert.match(result, /^completed: \(demo\) The tools returned/);
  assert.match(out, /\(demo\)/, 'the answer streamed as token events');
  const parley = parleyFor(stack.users.demo);
  const [session] = (await parley.chat.listSessions({ limit: 1 })).sessions;
  assert.equal(session.title, 'My week');
  const [plan] = await parley.sessionPlans(session.id);
  assert.deepEqual(plan.approvals.map((a) => [a.tool_name, a.status]), [['delete_calendar_event', 'approved']]);
});
