// watchSession() against the local stack: the demo turn (a plan, two executors, a destructive
// call waiting for approval) watched live, across a dropped socket whose replay comes back in
// reverse order, with a replayed event arriving late, and with nothing to replay at all.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { watchSession } from '../../src/index.js';
import { Gate, Network, assertIncreasing, parleyFor, recorder, skip, stack, supabaseFor } from './helpers.js';

const demo = stack?.users.demo;

/** A watched session of the demo user, and its demo turn sent and paused for approval. */
async function pausedDemoTurn(t, { network = new Network(), fetch } = {}) {
  const parley = parleyFor(demo, fetch ? { fetch } : {});
  const supabase = supabaseFor(demo, network);
  const session = await parleyFor(demo).chat.createSession({ title: 'watched' });
  const seen = recorder();
  const watch = watchSession({ client: parley, supabase, sessionId: session.id, ...seen.handlers });
  t.after(() => finish(watch, supabase));
  await watch.ready;
  assert.equal(watch.connection, 'live');
  const reply = await parley.send({ session_id: session.id, message: stack.demoMessage });
  const paused = await watch.turnEnd(reply.plan_id);
  assert.equal(paused.status, 'awaiting_approval');
  const pending = paused.plan.approvals.filter((a) => a.status === 'pending');
  assert.deepEqual(pending.map((a) => a.tool_name), ['delete_calendar_event']);
  return { parley, supabase, session, seen, watch, planId: reply.plan_id, paused, approval: pending[0] };
}

/** Approve from elsewhere (another tab): the plan resumes and completes meanwhile. */
async function approveElsewhere(planId, approvalId) {
  await parleyFor(demo).planner.decideApproval(planId, approvalId, { decision: 'approve' });
  const plan = await parleyFor(demo).planner.getPlan(planId);
  assert.equal(plan.status, 'completed');
}

async function finish(watch, supabase) {
  watch.close();
  await supabase.removeAllChannels();
  supabase.realtime.disconnect();
}

test('a turn watched live: each event once, in seq order; it pauses for approval, then completes', { skip }, async (t) => {
  const { parley, supabase, seen, watch, planId, paused, approval } = await pausedDemoTurn(t);
  const types = () => seen.events.map((e) => e.type);
  assert.equal(seen.events[0].type, 'status_update');
  assert.equal(seen.events[0].data.status, 'thinking', 'joined before the turn: heard from its first event');
  assert.ok(types().filter((t) => t === 'step_started').length >= 2);
  assert.equal(paused.done.data.status, 'awaiting_approval');

  await parley.planner.decideApproval(planId, approval.id, { decision: 'approve' });
  const end = await watch.turnEnd(planId, paused.seq);
  assert.equal(end.status, 'completed');
  assert.ok(end.seq > paused.seq);
  assert.match(end.done.data.answer, /\(demo\)/);
  assert.deepEqual(end.plan.steps.map((s) => s.status), ['completed', 'completed', 'completed']);
  assertIncreasing(assert, seen.seqs);
  assert.equal(new Set(seen.seqs).size, seen.seqs.length);
  assert.deepEqual(seen.ends.map((e) => e.status), ['awaiting_approval', 'completed']);
  assert.equal(types().filter((t) => t === 'done').length, 2);
  // The turn's end is known again without waiting: it is recorded.
  assert.equal(await watch.turnEnd(planId, paused.seq), end);
});

test('after a reconnect, a replay in reverse order is delivered in seq order, before the tables answer', { skip }, async (t) => {
  const network = new Network();
  const gate = new Gate();
  const { supabase, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network, fetch: gate.fetch });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(planId, approval.id);
  const heard = seen.events.length;
  const read = seen.snapshots.length;
  gate.closed = true; // the catch-up's reads wait
  network.shuffleReplay = true;
  network.offline = false;

  await seen.waitFor(() => seen.events.slice(heard).some((e) => e.type === 'done'));
  const replayed = seen.events.slice(heard);
  assert.ok(gate.held > 0, 'the catch-up asked the tables');
  assert.equal(seen.snapshots.length, read, 'no read answered: the replay alone brought the turn to its end');
  assert.deepEqual(replayed.filter((e) => ['step_completed', 'done'].includes(e.type)).map((e) => e.type), ['step_completed', 'done']);
  const order = network.replayedOrder;
  assert.ok(order.some((seq, i) => i > 0 && seq < order[i - 1]), `the replay came in order: ${order}`);
  assertIncreasing(assert, seen.seqs);

  gate.open();
  const end = await watch.turnEnd(planId, paused.seq);
  assert.equal(end.status, 'completed');
  assert.equal(end.done.data.status, 'completed');
  assertIncreasing(assert, seen.seqs);
});

test('a replayed event that arrives after later ones is not delivered out of order: the tables hold it', { skip }, async (t) => {
  const network = new Network();
  const gate = new Gate();
  const { supabase, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network, fetch: gate.fetch });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(planId, approval.id);
  const heard = new Set(seen.seqs);
  let late = null;
  network.holdBack((event) => {
    if (late) return event.seq === late.seq; // every copy: two joins' replays may both bring it
    if (heard.has(event.seq) || event.type !== 'agent_message') return false;
    late = event;
    return true;
  });
  gate.closed = true;
  network.offline = false;

  await seen.waitFor(() => seen.events.some((e) => e.type === 'done' && e.seq > paused.seq));
  assert.ok(late, 'the replay had an agent message');
  assert.equal(network.release(), 1);
  gate.open();
  const end = await watch.turnEnd(planId, paused.seq);
  assert.equal(end.status, 'completed');
  assert.ok(!seen.seqs.includes(late.seq), `${late.seq} was delivered after ${Math.max(...seen.seqs)}`);
  const read = seen.snapshots.flatMap((s) => s.entries.map((entry) => entry.seq));
  assert.ok(read.includes(late.seq), 'the late event\'s row was read from the timeline');
  assertIncreasing(assert, seen.seqs);
});

test('with nothing to replay, a turn that ended while the socket was down is read from the tables', { skip }, async (t) => {
  const network = new Network();
  network.noReplay = true;
  const { supabase, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(planId, approval.id);
  const heard = seen.events.length;
  network.offline = false;

  const end = await watch.turnEnd(planId, paused.seq);
  assert.equal(end.status, 'completed');
  assert.equal(end.done, null, 'its done was never heard');
  assert.deepEqual(seen.events.slice(heard).filter((e) => e.type === 'done'), []);
  assert.deepEqual(seen.ends.map((e) => e.status), ['awaiting_approval', 'completed']);
});

test('another user cannot watch the session: it is missing, and waiting on its turns fails', { skip }, async (t) => {
  const session = await parleyFor(demo).chat.createSession({ title: 'not yours' });
  const other = stack.users.other;
  const supabase = supabaseFor(other);
  const seen = recorder();
  const watch = watchSession({ client: parleyFor(other), supabase, sessionId: session.id, ...seen.handlers });
  await watch.ready;
  assert.equal(watch.missing, true);
  assert.equal(watch.closed, true);
  assert.deepEqual(seen.events, []);
  await assert.rejects(watch.turnEnd('00000000-0000-4000-8000-000000000000'), /closed/);
  await finish(watch, supabase);
});
