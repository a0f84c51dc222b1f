// A new user's first turn (issue 31, finding 5): signed up through the local stack's Supabase
// Auth with supabase-js — no seeded data of their own until then — the demo message pauses for
// approval naming one of their own calendar events, and the approved deletion succeeds. The
// decision is sent with decide() (finding 4): answered at once, its end watched via turnEnd.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '@supabase/supabase-js';
import { ParleyClient, watchSession } from '../../src/index.js';
import { Network, skip, stack } from './helpers.js';

const NIL = '00000000-0000-4000-8000-000000000000';

test('a user who just signed up plays the demo turn: its approval names their own event, and the deletion succeeds', { skip }, async (t) => {
  const supabase = createClient(stack.supabaseUrl, stack.anonKey, {
    auth: { persistSession: false },
    realtime: { transport: new Network().transport },
  });
  const email = `new-${crypto.randomUUID()}@example.com`;
  const { data, error } = await supabase.auth.signUp({ email, password: 'choose-a-password' });
  assert.equal(error, null);
  assert.ok(data.session, 'signed in at once (the local Auth confirms sign-ups)');
  const accessToken = async () => (await supabase.auth.getSession()).data.session?.access_token ?? null;
  const parley = new ParleyClient({ chat: stack.chat, planner: stack.planner, accessToken });

  const session = await parley.chat.createSession({ title: 'first turn' });
  const watch = watchSession({ client: parley, supabase, sessionId: session.id });
  t.after(async () => {
    watch.close();
    await supabase.removeAllChannels();
    supabase.realtime.disconnect();
  });
  await watch.ready;
  const { plan_id: planId } = await parley.send({ session_id: session.id, message: stack.demoMessage });
  const paused = await watch.turnEnd(planId);
  assert.equal(paused.status, 'awaiting_approval');
  const [approval] = paused.plan.approvals.filter((a) => a.status === 'pending');
  assert.equal(approval.tool_name, 'delete_calendar_event');
  assert.notEqual(approval.tool_args.event_id, NIL, 'it names an event that exists');

  const decided = await parley.decide(planId, approval.id, { decision: 'approve' });
  assert.equal(decided.approval.status, 'approved');
  assert.equal(decided.plan.handed_off, true, 'answered once the decision was recorded');
  const end = await watch.turnEnd(planId, paused.seq);
  assert.equal(end.status, 'completed');
  const deletion = end.plan.steps.find((s) => s.step_number === 3);
  assert.equal(deletion.status, 'completed');
  assert.match(deletion.result ?? '', /"deleted": ?true/);
  assert.doesNotMatch(end.done.data.answer, /not.found/i);
});
