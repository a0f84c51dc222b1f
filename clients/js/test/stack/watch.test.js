// watchSession() against the local stack: the demo turn (a plan, two executors, a destructive
// call waiting for approval) watched live, across a dropped socket whose replay comes back in
// reverse order, with a replayed event arriving late, and with nothing to replay at all.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { RealtimeError, watchSession } from '../../src/index.js';
import {
  Gate, Network, anonymousSupabase, assertIncreasing, mintToken, newUser, parleyFor, recorder, skip,
  stack, supabaseFor,
} from './helpers.js';

const demo = stack?.users.demo;

/** A watched session of a new user (their calendar has events to delete), and its demo turn
 * sent and paused for approval. */
async function pausedDemoTurn(t, { network = new Network(), fetch } = {}) {
  const user = await newUser();
  const parley = parleyFor(user, fetch ? { fetch } : {});
  const supabase = supabaseFor(user, network);
  const session = await parleyFor(user).chat.createSession({ title: 'watched' });
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
  return { user, parley, supabase, session, seen, watch, planId: reply.plan_id, paused, approval: pending[0] };
}

/** Approve from elsewhere (another tab): the plan resumes and completes meanwhile. */
async function approveElsewhere(user, planId, approvalId) {
  await parleyFor(user).planner.decideApproval(planId, approvalId, { decision: 'approve' });
  const plan = await parleyFor(user).planner.getPlan(planId);
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
  const { user, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network, fetch: gate.fetch });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(user, planId, approval.id);
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
  const { user, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network, fetch: gate.fetch });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(user, planId, approval.id);
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
  const { user, seen, watch, planId, paused, approval } = await pausedDemoTurn(t, { network });
  network.cut();
  await seen.waitFor(() => watch.connection === 'reconnecting');
  await approveElsewhere(user, planId, approval.id);
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
  t.after(() => finish(watch, supabase));
  await watch.ready; // Realtime refused the channel; the session's 404 says why
  assert.equal(watch.missing, true);
  assert.equal(watch.closed, true);
  assert.deepEqual(seen.events, []);
  await assert.rejects(watch.turnEnd('00000000-0000-4000-8000-000000000000'), /not found/);
});

test('token batches that arrive after the turn paused are in its texts, as the tables hold them (no streamed text lost)', { skip }, async (t) => {
  const network = new Network();
  network.holdTokens = true; // not one batch reaches the client before the pause's `done`
  const { parley, seen, watch, planId, session } = await pausedDemoTurn(t, { network });
  assert.deepEqual(seen.events.filter((e) => e.type === 'token'), []);
  const rows = (await parley.chat.listMessages(session.id, { include: 'internal' })).messages
    .filter((m) => m.role === 'assistant' && m.plan_id === planId);
  const stored = rows.map((m) => m.content).filter(Boolean);
  assert.ok(stored.length >= 1 && stored[0].startsWith('(demo)'), JSON.stringify(stored));
  assert.deepEqual(watch.texts(planId).map((x) => x.text), stored);
  assert.ok(network.releaseTokens() >= 1, 'the planner streamed');
  await watch.catchUp();
  assert.deepEqual(watch.texts(planId).map((x) => [x.text, x.final]), stored.map((text) => [text, true]));
  assertIncreasing(assert, seen.seqs); // the late batches did not break the order of onEvent
});

// A watch fails loudly (issue 31, finding 1): whatever Realtime refuses or closes ends the
// watch with Realtime's reason — `ready` rejects, `watch.error` holds it, waiting `turnEnd`s
// reject with it.

/** A session of the demo user with a turn in it (the demo message: it pauses for approval). */
async function sessionWithTurn(title) {
  const parley = parleyFor(demo);
  const session = await parley.chat.createSession({ title });
  const { plan_id: planId } = await parley.send({ session_id: session.id, message: stack.demoMessage });
  return { parley, session, planId };
}

async function assertFailsWith(t, supabase, reason) {
  const { parley, session, planId } = await sessionWithTurn('refused');
  const seen = recorder();
  const watch = watchSession({ client: parley, supabase, sessionId: session.id, ...seen.handlers });
  t.after(() => finish(watch, supabase));
  const waiting = watch.turnEnd(planId, Number.MAX_SAFE_INTEGER); // an end that never comes
  const error = await watch.ready.then(() => assert.fail('ready resolved'), (e) => e);
  assert.ok(error instanceof RealtimeError, String(error));
  assert.match(error.reason, reason);
  assert.equal(watch.error, error);
  assert.equal(watch.connection, 'failed');
  assert.equal(watch.closed, true);
  assert.equal(await waiting.then(() => null, (e) => e), error);
  await assert.rejects(watch.turnEnd(planId), (e) => e === error);
}

test('a watch without a user token fails: ready rejects with Realtime\'s reason, and so does turnEnd', { skip }, async (t) => {
  await assertFailsWith(t, anonymousSupabase(), /^Unauthorized: You do not have permissions to read from this Channel topic: session:/);
});

test('a watch past the channel limit fails with Realtime\'s reason', { skip }, async (t) => {
  const supabase = supabaseFor(demo);
  for (let i = 1; i < stack.maxChannels + 1; i++) {
    await new Promise((resolve, reject) => supabase.channel(`filler-${i}`).subscribe((status, error) => (
      status === 'SUBSCRIBED' ? resolve() : status === 'CHANNEL_ERROR' && reject(error))));
  }
  await assertFailsWith(t, supabase, /^ChannelRateLimitReached: Too many channels$/);
});

test('a channel Realtime closes (its token expired, not refreshed) fails the watch and its waiting turnEnd', { skip }, async (t) => {
  const user = { ...demo, ...mintToken(demo.id, 5) };
  const supabase = supabaseFor(user);
  const { parley, session, planId } = await sessionWithTurn('expiring');
  const seen = recorder();
  const watch = watchSession({ client: parley, supabase, sessionId: session.id, ...seen.handlers });
  t.after(() => finish(watch, supabase));
  await watch.ready;
  assert.equal(watch.connection, 'live');
  const waiting = watch.turnEnd(planId, Number.MAX_SAFE_INTEGER);
  await seen.waitFor(() => watch.error !== null); // Realtime re-checks the token at its exp
  assert.ok(watch.error instanceof RealtimeError, String(watch.error));
  assert.match(watch.error.reason, /^Token has expired \d+ seconds ago$/);
  assert.equal(watch.connection, 'failed');
  assert.equal(await waiting.then(() => null, (e) => e), watch.error);
});

test('a token refreshed with setAuth keeps the watch live past the first token\'s expiry', { skip }, async (t) => {
  const owner = await newUser();
  const user = { ...owner, ...mintToken(owner.id, 5) };
  const supabase = supabaseFor(user);
  const parley = parleyFor(owner);
  const session = await parley.chat.createSession({ title: 'refreshed' });
  const seen = recorder();
  const watch = watchSession({ client: parley, supabase, sessionId: session.id, ...seen.handlers });
  t.after(() => finish(watch, supabase));
  await watch.ready;
  const expires = user.exp;
  user.token = mintToken(owner.id, 3600).token; // what supabase-js's auth does on TOKEN_REFRESHED:
  await supabase.realtime.setAuth(user.token); // hand Realtime the new token
  // The first token's expiry must pass for the test to mean anything: wait for the clock (the
  // server re-checks a channel's token when it expires), then run a turn through the channel.
  await sleep(Math.max(0, expires * 1000 + 1000 - Date.now()));
  const reply = await parley.send({ session_id: session.id, message: stack.demoMessage });
  const paused = await watch.turnEnd(reply.plan_id);
  assert.equal(paused.status, 'awaiting_approval');
  assert.ok(paused.done, 'the turn\'s done arrived over the channel');
  assert.equal(watch.error, null);
  assert.equal(watch.connection, 'live');
});
