// ParleyClient against the local stack: every route of the three functions is called through
// its typed call (a test below holds the calls made against the route table), answers and
// problems come back as documented, and a streamed send reads as events.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, NetworkError, ParleyClient, routes } from '../../src/index.js';
import { assertIncreasing, parleyFor, skip, stack } from './helpers.js';

const called = [];
/** A fetch that notes each request's method and path. */
const noting = (url, init) => {
  called.push(`${init.method} ${new URL(url).pathname}`);
  return fetch(url, init);
};
const demo = stack && parleyFor(stack.users.demo, { fetch: noting });
const operator = stack && parleyFor(stack.users.operator, { fetch: noting });
const other = stack && parleyFor(stack.users.other, { fetch: noting });
const MISSING = '00000000-0000-4000-8000-000000000000';

async function problem(call, status) {
  const error = await call.then(() => assert.fail('answered 2xx'), (e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, status, error.message);
  assert.equal(error.problem.status, status);
  assert.ok(error.message.length > 0);
  return error;
}

test('sessions: create, list, read, rename, archive, fork, delete', { skip }, async () => {
  const session = await demo.chat.createSession({ title: 'client test' });
  assert.equal(session.title, 'client test');
  assert.equal((await demo.chat.getSession(session.id)).id, session.id);
  const listed = await demo.chat.listSessions({ include_archived: false, limit: 100 });
  assert.ok(listed.sessions.some((s) => s.id === session.id));
  const newer = await demo.chat.createSession({ title: 'newer' });
  const first = await demo.chat.listSessions({ limit: 1 });
  assert.deepEqual(first.sessions.map((s) => s.id), [newer.id], 'most recently active first');
  const next = await demo.chat.listSessions({ limit: 1, cursor: first.next_cursor });
  assert.deepEqual(next.sessions.map((s) => s.id), [session.id]);
  await demo.chat.deleteSession(newer.id);
  assert.equal((await demo.chat.updateSession(session.id, { title: 'renamed' })).title, 'renamed');
  assert.equal((await demo.chat.updateSession(session.id, { status: 'archived' })).status, 'archived');
  assert.ok(!(await demo.chat.listSessions()).sessions.some((s) => s.id === session.id));
  assert.equal((await demo.chat.updateSession(session.id, { status: 'active' })).status, 'active');

  const reply = await demo.send({ session_id: session.id, message: 'hello' });
  const { entries } = await demo.chat.getTimeline(session.id, { after_seq: 0, limit: 10 });
  const forked = await demo.chat.forkSession(session.id, { at_message_id: reply.message_id });
  assert.equal(forked.forked_from_session_id, session.id);
  assert.ok(entries.length >= 1);

  assert.equal(await demo.chat.deleteSession(forked.id), null);
  await problem(demo.chat.getSession(forked.id), 404);
  await problem(other.chat.getSession(session.id), 404); // another user's: as if missing
});

test('a turn: send, the tables, the plan, its approvals and its transcript', { skip }, async () => {
  const session = await demo.chat.createSession({});
  const clientMessageId = crypto.randomUUID();
  const reply = await demo.send({ session_id: session.id, message: 'hello', client_message_id: clientMessageId });
  assert.equal(reply.session_id, session.id);
  assert.equal(reply.created, true);
  const again = await demo.send({ session_id: session.id, message: 'hello', client_message_id: clientMessageId });
  assert.equal(again.plan_id, reply.plan_id, 'a resend returns the original turn');
  assert.equal(again.created, false);

  const plan = await demo.planner.getPlan(reply.plan_id);
  assert.equal(plan.session_id, session.id);
  assert.ok(Array.isArray((await demo.planner.listApprovals(reply.plan_id)).approvals));
  const { plans } = await demo.chat.listPlans(session.id, { after_seq: 0, limit: 10 });
  assert.deepEqual(plans.map((p) => p.id), [reply.plan_id]);
  assert.deepEqual((await demo.sessionPlans(session.id)).map((p) => p.id), [reply.plan_id]);
  const { messages } = await demo.chat.listMessages(session.id, { after_seq: 0, limit: 50 });
  assert.equal(messages[0].content, 'hello');
  const timeline = await demo.timeline(session.id);
  assertIncreasing(assert, timeline.map((e) => e.seq));
  assert.match(await demo.chat.planTranscript(reply.plan_id), /hello/);
  const cancelled = await demo.planner.cancelPlan(reply.plan_id);
  assert.equal(cancelled.plan_id, reply.plan_id);
  await problem(demo.planner.decideApproval(reply.plan_id, MISSING, { decision: 'approve' }), 404);
  await problem(demo.planner.getPlan(MISSING), 404);
});

test('a streamed send reads as the turn\'s events, in seq order, ending with done', { skip }, async () => {
  const session = await demo.chat.createSession({});
  const stream = await demo.sendStream({ session_id: session.id, message: 'hello' });
  assert.equal(stream.sessionId, session.id);
  const events = await stream.all();
  assert.equal(events.at(-1).type, 'done');
  assert.equal(events.at(-1).plan_id, stream.planId);
  assertIncreasing(assert, events.map((e) => e.seq));
  // Sent again, the ended turn answers as it stands: nothing is streamed (or broadcast) twice.
  const [user] = (await demo.chat.listMessages(session.id)).messages;
  const again = await demo.sendStream({ session_id: session.id, message: 'hello', client_message_id: user.client_message_id });
  assert.equal(again.plan_id, stream.planId);
  assert.equal(again.created, false);
});

test('health, the events\' schema, dashboards, and the service routes a user may not call', { skip }, async () => {
  assert.equal((await demo.chat.health()).status, 'ok');
  assert.equal((await demo.planner.health()).status, 'ok');
  assert.equal((await demo.executor.health()).status, 'ok');
  const schema = await demo.chat.getEventsSchema();
  assert.equal(schema.oneOf.length, 12);
  assert.ok(Array.isArray((await operator.chat.getDailyDashboards({ days: 7 })).executions));
  await problem(demo.chat.getDailyDashboards({ days: 7 }), 403);
  await problem(demo.planner.runPlan(MISSING, { stream: false }), 403);
  await problem(demo.executor.runStep(MISSING, { attempt: 1 }), 403);
});

test('bad input is a problem; a refused token calls onUnauthorized; no answer is a NetworkError', { skip }, async () => {
  const invalid = await problem(demo.chat.createSession({ title: 'x'.repeat(10_000) }), 422);
  assert.ok(invalid.problem.detail);
  let unauthorized = null;
  const stale = new ParleyClient({ chat: stack.chat, accessToken: () => 'not-a-token', onUnauthorized: (e) => { unauthorized = e; } });
  const refused = await problem(stale.chat.listSessions(), 401);
  assert.equal(unauthorized, refused);
  const away = new ParleyClient({ chat: 'http://127.0.0.1:9', accessToken: 'x' });
  await assert.rejects(away.chat.health(), NetworkError);
  assert.throws(() => demo.chat.getSession(''), TypeError);
});

test('every route of the three functions was called above, through its typed call', { skip }, () => {
  const missing = [];
  for (const [fn, calls] of Object.entries(routes)) {
    for (const [name, route] of Object.entries(calls)) {
      const prefix = new URL(stack[fn]).pathname;
      const pattern = new RegExp(`^${route.method} ${prefix}${route.path.replace(/\{\w+\}/g, '[^/]+')}$`);
      if (!called.some((c) => pattern.test(c))) missing.push(`${fn}.${name}`);
    }
  }
  assert.deepEqual(missing, []);
});
