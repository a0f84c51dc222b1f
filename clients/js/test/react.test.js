// @parley/client/react (issue 31, finding 6): `useParleySession(sessionId)` rendered with
// React's own renderer as React recommends testing it (@testing-library/react, a DOM from
// happy-dom in Node), over the fake channel and tables of fakes.js: the turn's events, its
// status and texts and answer, the connection, a refused join's error, `send` and `decide`.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { GlobalRegistrator } from '@happy-dom/global-registrator';
import { ANSWER, PLAN, SESSION, Tables, WORDS, fakeSupabase, turn } from './fakes.js';

let rtl;
let react;
let hook;
before(async () => {
  GlobalRegistrator.register();
  rtl = await import('@testing-library/react');
  react = await import('react');
  hook = await import('../src/react.js');
});
after(() => GlobalRegistrator.unregister());

/** `waitFor` with room for a loaded machine (its default gives up after 1 s). */
const waitFor = (check) => rtl.waitFor(check, { timeout: 10_000 });

/** The fake tables' client, with `send` and `decide` noting what they were asked. */
function clientOf(tables) {
  const asked = [];
  const client = {
    ...tables.client,
    send: async (body) => { asked.push(['send', body]); return { plan_id: PLAN, session_id: SESSION }; },
    decide: async (...args) => { asked.push(['decide', ...args]); return { approval: {}, plan: { handed_off: true } }; },
  };
  return { client, asked };
}

test('the hook gives the turn as it happens: events, status, the planner\'s texts and the answer', async () => {
  const { events, rows, stored } = turn();
  const tables = new Tables(rows, events);
  const supabase = fakeSupabase();
  const { client } = clientOf(tables);
  const { result, unmount } = rtl.renderHook(() => hook.useParleySession(SESSION, { client, supabase }));
  await waitFor(() => assert.equal(result.current.ready, true));
  assert.equal(result.current.connection, 'live');
  assert.deepEqual(result.current.turns, []);
  // The first batch comes last of all (as the issue saw it); the rest in order.
  const [first, ...rest] = events;
  const late = events.find((e) => e.type === 'token');
  for (const event of [first, ...rest.filter((e) => e !== late), late]) {
    tables.committed = Math.max(tables.committed, event.seq);
    rtl.act(() => supabase.deliver(event));
  }
  await waitFor(() => assert.equal(result.current.turns[0]?.answer, stored[1]));
  await waitFor(() => assert.ok(result.current.turns[0].texts.every((t) => t.final), 'the tables read after done'));
  const [current] = result.current.turns;
  assert.equal(current.planId, PLAN);
  assert.equal(current.status, 'completed');
  assert.equal(current.ended, true);
  assert.deepEqual(current.texts.map((t) => [t.messageId, t.text, t.final]), [[WORDS, stored[0], true], [ANSWER, stored[1], true]]);
  assert.equal(current.end?.status, 'completed');
  assert.equal(result.current.events.filter((e) => e.type === 'done').length, 1);
  assert.ok(result.current.events.every((e, i, all) => i === 0 || e.seq > all[i - 1].seq));
  unmount();
});

test('send and decide go to the client: the message to this session, a decision answered at once', async () => {
  const tables = new Tables([], []);
  const { client, asked } = clientOf(tables);
  const wrapper = ({ children }) => react.createElement(hook.ParleyProvider, { client, supabase: fakeSupabase() }, children);
  const { result, unmount } = rtl.renderHook(() => hook.useParleySession(SESSION), { wrapper });
  await waitFor(() => assert.equal(result.current.ready, true));
  await result.current.send('plan my week');
  await result.current.decide(PLAN, 'a1', 'reject', 'not that one');
  await result.current.decide(PLAN, 'a2', 'approve');
  assert.deepEqual(asked, [
    ['send', { session_id: SESSION, message: 'plan my week' }],
    ['decide', PLAN, 'a1', { decision: 'reject', text: 'not that one' }],
    ['decide', PLAN, 'a2', { decision: 'approve' }],
  ]);
  unmount();
});

test('a join Realtime refuses is the hook\'s error, with Realtime\'s reason', async () => {
  const reason = 'Unauthorized: You do not have permissions to read from this Channel topic: session:s1';
  const { client } = clientOf(new Tables([], []));
  const { result, unmount } = rtl.renderHook(() => hook.useParleySession(SESSION, { client, supabase: fakeSupabase(reason) }));
  await waitFor(() => assert.equal(result.current.connection, 'failed'));
  assert.equal(result.current.error?.name, 'RealtimeError');
  assert.equal(result.current.error.reason, reason);
  assert.equal(result.current.ready, false);
  unmount();
});

test('the core package does not import React; the hook needs its clients', async () => {
  const { readFile } = await import('node:fs/promises');
  for (const file of ['index.js', 'client.js', 'watch.js', 'texts.js', 'sequencer.js', 'sse.js']) {
    const source = await readFile(new URL(`../src/${file}`, import.meta.url), 'utf8');
    assert.doesNotMatch(source, /from 'react'|from "react"/, file);
  }
  const { unmount } = rtl.renderHook(() => {
    try { return hook.useParleySession(SESSION); } catch (error) { return error; }
  });
  unmount();
  assert.throws(() => rtl.renderHook(() => hook.useParleySession(SESSION)), /give client and supabase/);
});
