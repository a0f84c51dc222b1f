// A fresh app (this folder, @parley/client installed from its `npm pack` tarball beside
// supabase-js and React) runs the hook against the local stack: a user signs up, and
// `useParleySession` shows the demo turn through its approval to its answer. React renders in
// Node with @testing-library/react over happy-dom's DOM (issue 31, "Done when").

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '@supabase/supabase-js';
import WebSocket from 'ws';
import { ParleyClient } from '@parley/client';
import { useParleySession } from '@parley/client/react';

const stack = JSON.parse(process.env.PARLEY_STACK);

/** A DOM for React (happy-dom's window as globals), keeping Node's own network and timers. */
async function domForReact() {
  const keep = ['fetch', 'Request', 'Response', 'Headers', 'URL', 'URLSearchParams', 'WebSocket',
    'AbortController', 'AbortSignal', 'FormData', 'Blob', 'TextEncoder', 'TextDecoder', 'crypto',
    'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask'];
  const node = Object.fromEntries(keep.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
  const { GlobalRegistrator } = await import('@happy-dom/global-registrator');
  GlobalRegistrator.register();
  for (const [name, descriptor] of Object.entries(node)) {
    if (descriptor) Object.defineProperty(globalThis, name, descriptor);
    else delete globalThis[name];
  }
  return import('@testing-library/react');
}

test('a new user\'s demo turn through the hook: it pauses for approval, is decided, and answers', async (t) => {
  const { renderHook, waitFor } = await domForReact();
  const supabase = createClient(stack.supabaseUrl, stack.anonKey, {
    auth: { persistSession: false },
    realtime: { transport: WebSocket },
  });
  const { data, error } = await supabase.auth.signUp({ email: `hook-${crypto.randomUUID()}@example.com`, password: 'choose-a-password' });
  assert.equal(error, null);
  assert.ok(data.session);
  const accessToken = async () => (await supabase.auth.getSession()).data.session?.access_token ?? null;
  const client = new ParleyClient({ chat: stack.chat, planner: stack.planner, accessToken });
  const session = await client.chat.createSession({ title: 'hook' });

  const { result, unmount } = renderHook(() => useParleySession(session.id, { client, supabase }));
  t.after(() => {
    unmount();
    supabase.realtime.disconnect();
    return supabase.auth.stopAutoRefresh();
  });
  const wait = (check) => waitFor(check, { timeout: 30_000 });
  await wait(() => assert.equal(result.current.ready, true));
  assert.equal(result.current.connection, 'live');

  await result.current.send(stack.demoMessage);
  await wait(() => assert.equal(result.current.turns[0]?.pending.length, 1));
  const [turn] = result.current.turns;
  assert.equal(turn.status, 'awaiting_approval');
  const [approval] = turn.pending;
  assert.equal(approval.tool_name, 'delete_calendar_event');
  assert.equal(turn.texts[0]?.text, '(demo) Writing a plan.');

  const decided = await result.current.decide(turn.planId, approval.id, 'approve');
  assert.equal(decided.plan.handed_off, true);
  await wait(() => assert.equal(result.current.turns[0].status, 'completed'));
  await wait(() => assert.match(result.current.turns[0].answer ?? '', /^\(demo\) The tools returned/));
  assert.doesNotMatch(result.current.turns[0].answer, /not.found/i);
  assert.equal(result.current.error, null);
  const seqs = result.current.events.map((e) => e.seq);
  assert.ok(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]), 'events in seq order');
});
