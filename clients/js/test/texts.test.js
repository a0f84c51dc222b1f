// No streamed text lost (issue 31, finding 2): a turn's events — its token batches among them —
// handed to a real `watchSession()` in adversarial orders (seeded shuffles, batches held back
// until after the turn's `done`, batches lost), over a fake channel and fake tables that answer
// as the functions would at the moment they are read. What a subscriber assembles from the
// watch's texts equals the stored messages: the words before the tool calls and the answer.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamedTexts, watchSession } from '../src/index.js';

import { ANSWER, PLAN, SESSION, Tables, WORDS, fakeSupabase, turn } from './fakes.js';

/** A seeded generator (mulberry32): the same orders every run. */
function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Play the turn into a watch: events are committed in seq order, each arriving after its
 * commit, at most `lag` arrivals later (tokens: any time up to the end); `lost` batches never
 * arrive. Returns the watch and what the subscriber assembled from `onText`.
 */
async function play({ seed, lost = new Set(), lag = 3, holdReads = false }) {
  const { events, rows, stored } = turn();
  const tables = new Tables(rows, events);
  const supabase = fakeSupabase();
  const assembled = new Map(); // message key → text, as onText last gave it
  let snapshots = 0;
  const watch = watchSession({
    client: tables.client, supabase, sessionId: SESSION, replayQuietMs: 1,
    onSnapshot: () => { snapshots += 1; },
    onText: (planId, texts) => {
      assembled.clear();
      texts.forEach((t, i) => assembled.set(t.messageId ?? `streaming ${i}`, t.text));
    },
  });
  await watch.ready;
  if (holdReads) tables.gate = new Promise(() => {}); // no read answers after the join's
  const next = random(seed);
  const pending = []; // [arrival time, event]
  for (const [time, event] of events.entries()) {
    tables.committed = Math.max(tables.committed, event.seq); // its rows, and those before it
    if (lost.has(event.seq)) continue;
    const delay = event.type === 'token' ? next() * (events.length - time + 2) : next() * lag;
    pending.push([time + delay, event]);
  }
  pending.sort((a, b) => a[0] - b[0]);
  for (const [, event] of pending) {
    supabase.deliver(event);
    await settle();
  }
  await settle();
  return { watch, stored, assembled, snapshots, order: pending.map(([, e]) => e.seq) };
}

test('late token batches take their place: the texts equal the stored ones before the tables are read', async () => {
  for (let seed = 1; seed <= 200; seed++) {
    // The durable events in order, the batches anywhere up to the end (after the `done`).
    const { watch, stored, order, snapshots } = await play({ seed, holdReads: true, lag: 0 });
    const texts = watch.texts(PLAN);
    assert.deepEqual(texts.map((t) => t.text), stored, `seed ${seed}, arrivals ${order.join(' ')}`);
    assert.deepEqual(texts.map((t) => t.messageId), [WORDS, ANSWER]);
    assert.equal(snapshots, 1, 'only the join\'s catch-up was answered');
    assert.ok(order.some((seq, i) => seq < 20 && order.indexOf(20) < i), `seed ${seed}: no batch came after its tool call`);
    watch.close();
  }
});

test('the first batch arriving after every other event (as the issue saw it) is in the words before the tool call', async () => {
  const { events, stored } = turn();
  const texts = new StreamedTexts();
  const first = events.find((e) => e.type === 'token');
  for (const event of [...events.filter((e) => e !== first), first]) {
    if (event.type === 'token') texts.token(event);
    else texts.event(event);
  }
  assert.deepEqual(texts.texts(PLAN).map((t) => [t.text, t.final]), stored.map((text) => [text, false]));
});

test('batches that never arrive are read from the tables: the texts equal the stored ones, final', async () => {
  for (let seed = 1; seed <= 100; seed++) {
    const next = random(seed * 7919);
    const tokens = turn().events.filter((e) => e.type === 'token').map((e) => e.seq);
    const lost = new Set(tokens.filter(() => next() < 0.5));
    const { watch, stored, assembled, order } = await play({ seed, lost });
    const texts = watch.texts(PLAN);
    const why = `seed ${seed}, lost ${[...lost].join(' ')}, arrivals ${order.join(' ')}`;
    assert.deepEqual(texts.map((t) => [t.text, t.final]), stored.map((text) => [text, true]), why);
    assert.deepEqual([...assembled.values()], stored, `what onText gave: ${why}`);
    watch.close();
  }
});

test('a text streaming before anything names its message is the open one, and is split when its bound arrives', () => {
  const texts = new StreamedTexts();
  const token = (seq, text) => texts.token({ seq, type: 'token', plan_id: PLAN, data: { text } });
  token(41, 'answer ');
  token(4, 'words');
  assert.deepEqual(texts.texts(PLAN).map((t) => [t.messageId, t.text]), [[null, 'wordsanswer ']]);
  texts.event({ seq: 20, type: 'tool_call', plan_id: PLAN, data: { message_id: WORDS } });
  token(42, 'goes on');
  assert.deepEqual(texts.texts(PLAN).map((t) => [t.messageId, t.text]), [[WORDS, 'words'], [null, 'answer goes on']]);
  texts.entry({ seq: 19, source: 'chat', kind: 'assistant', plan_id: PLAN, message_id: WORDS, content: 'stored words' });
  assert.deepEqual(texts.texts(PLAN).map((t) => [t.messageId, t.text, t.final]), [[WORDS, 'stored words', true], [null, 'answer goes on', false]]);
});
