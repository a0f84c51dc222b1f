// The README's TypeScript example (examples/send_watch_approve.ts), run as `npm run example`
// runs it — on Node 20, reading the local stack's values from the environment — against the
// local stack: it signs the demo user in with Supabase Auth (the stack's twin), sends, watches
// the turn pause for approval, decides, sees it complete, and exits.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { parleyFor, skip, stack } from './helpers.js';

/** `npm run example`'s command, with the values `dev.py run` writes to .parley/client.env. */
function runExample() {
  const env = {
    ...process.env,
    PARLEY_CLIENT_ENV: '/nonexistent/client.env', // this test's values, not a running stack's
    SUPABASE_URL: stack.supabaseUrl, SUPABASE_ANON_KEY: stack.anonKey, PARLEY_CHAT_URL: stack.chat,
    PARLEY_PLANNER_URL: stack.planner, PARLEY_EMAIL: stack.demoEmail, PARLEY_PASSWORD: stack.demoPassword,
  };
  const script = new URL('../../scripts/example.mjs', import.meta.url).pathname;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => { out += chunk; });
    child.stderr.on('data', (chunk) => { err += chunk; });
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

test('the README\'s example runs as `npm run example`: signs in, sends, watches, approves, the turn completes, it exits', { skip }, async () => {
  const { code, out, err } = await runExample();
  assert.equal(code, 0, `${out}\n${err}`);
  const lines = out.trim().split('\n');
  assert.equal(lines[0], 'planner: (demo) Writing a plan.', out);
  assert.match(out, /^approving delete_calendar_event \{"event_id":"[0-9a-f-]{36}"\}$/m);
  assert.match(out, /^completed: \(demo\) The tools returned/m);
  assert.match(out, /^planner: \(demo\) The tools returned/m, 'the answer, as its text');
  const parley = parleyFor(stack.users.demo);
  const [session] = (await parley.chat.listSessions({ limit: 1 })).sessions;
  assert.equal(session.title, 'My week');
  const [plan] = await parley.sessionPlans(session.id);
  assert.deepEqual(plan.approvals.map((a) => [a.tool_name, a.status]), [['delete_calendar_event', 'approved']]);
});
