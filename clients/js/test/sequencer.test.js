// The ordering rules alone (no network): whatever order events arrive in — replays shuffled as
// hosted Realtime shuffles one transaction's events, live events interleaved with catch-ups —
// what is delivered is each event once, in strictly increasing seq, and nothing stored is lost
// (delivered, in a snapshot, or reported late so that the next snapshot holds it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sequencer } from '../src/sequencer.js';

const PLAN = 'p1';
const event = (seq, type = 'agent_message', data = {}) => ({ seq, type, plan_id: PLAN, session_id: 's', ts: '', data });

function recorder() {
  const seen = { events: [], snapshots: [], late: [] };
  const sequencer = new Sequencer({
    onEvent: (e) => seen.events.push(e.seq),
    onSnapshot: (s) => seen.snapshots.push(s.seq),
    onLate: (e) => seen.late.push(e.seq),
  });
  return { sequencer, seen };
}

/** A seeded generator (mulberry32): the same shuffles every run. */
function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(list, next) {
  const copy = [...list];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

test('a replayed batch is delivered in seq order, whatever order it came in', () => {
  const { sequencer, seen } = recorder();
  // As the issue saw it: one transaction's events, replayed newest-first within the tie.
  for (const seq of [46, 45, 44, 48, 47]) sequencer.replayed(event(seq, seq === 48 ? 'done' : 'agent_message'));
  assert.deepEqual(seen.events, [], 'nothing before the batch is complete');
  sequencer.flushReplay();
  assert.deepEqual(seen.events, [44, 45, 46, 47, 48]);
});

test('a live event completes the replayed batch and follows it', () => {
  const { sequencer, seen } = recorder();
  sequencer.replayed(event(3));
  sequencer.replayed(event(2));
  sequencer.live(event(4));
  assert.deepEqual(seen.events, [2, 3, 4]);
});

test('an event is delivered once, however often it arrives', () => {
  const { sequencer, seen } = recorder();
  sequencer.live(event(1));
  sequencer.replayed(event(1));
  sequencer.replayed(event(2));
  sequencer.replayed(event(2));
  sequencer.flushReplay();
  sequencer.live(event(2));
  sequencer.live(event(1));
  assert.deepEqual(seen.events, [1, 2]);
  assert.deepEqual(seen.late, []);
});

test('during a catch-up live events are held, then delivered in order around the snapshot', () => {
  const order = [];
  const sequencer = new Sequencer({ onEvent: (e) => order.push(e.seq), onSnapshot: (x) => order.push(`snapshot ${x.seq}`) });
  sequencer.live(event(1));
  sequencer.hold();
  sequencer.live(event(9));
  sequencer.live(event(4)); // committed before the snapshot was read: it comes first
  sequencer.live(event(7));
  assert.deepEqual(order, [1]);
  sequencer.release({ seq: 5, plans: [] });
  assert.deepEqual(order, [1, 4, 'snapshot 5', 7, 9]);
  sequencer.live(event(3)); // arrived after the snapshot that holds it
  sequencer.live(event(5));
  assert.deepEqual(order, [1, 4, 'snapshot 5', 7, 9]);
});

test('replayed events are delivered before the snapshot the catch-up reads after them', () => {
  const order = [];
  const s = new Sequencer({ onEvent: (e) => order.push(e.seq), onSnapshot: (x) => order.push(`snapshot ${x.seq}`) });
  s.hold();
  s.replayed(event(12));
  s.replayed(event(11));
  s.live(event(14));
  s.release({ seq: 13, plans: [] });
  assert.deepEqual(order, [11, 12, 'snapshot 13', 14]);
});

test('an event below one delivered is not delivered out of order: it is reported late', () => {
  const { sequencer, seen } = recorder();
  sequencer.live(event(10));
  sequencer.live(event(8));
  assert.deepEqual(seen.events, [10]);
  assert.deepEqual(seen.late, [8]);
  sequencer.release({ seq: 10, plans: [] }); // the catch-up it asked for holds it
  sequencer.live(event(8));
  assert.deepEqual(seen.late, [8], 'covered by the snapshot now: dropped quietly');
});

test('token batches: not covered by snapshots, never after a later event or their plan\'s end', () => {
  const { sequencer, seen } = recorder();
  sequencer.live(event(3, 'status_update'));
  sequencer.hold();
  sequencer.release({ seq: 40, plans: [] }); // the stream's numbers were reserved: last_seq 40
  sequencer.live(event(10, 'token'));
  sequencer.live(event(11, 'token'));
  sequencer.live(event(41, 'tool_call'));
  sequencer.live(event(12, 'token')); // arrived after a later event: its words are stored
  assert.deepEqual(seen.events, [3, 10, 11, 41]);
  sequencer.live(event(50, 'done', { status: 'completed' }));
  sequencer.live(event(45, 'token'));
  assert.deepEqual(seen.events, [3, 10, 11, 41, 50]);
  assert.deepEqual(seen.late, [], 'a token is never worth a catch-up');
});

test('a plan the snapshot shows ended drops its tokens older than the snapshot', () => {
  const { sequencer, seen } = recorder();
  sequencer.hold();
  sequencer.release({ seq: 30, plans: [{ id: PLAN, status: 'completed' }] });
  sequencer.live(event(20, 'token'));
  assert.deepEqual(seen.events, []);
});

/**
 * A complex turn's events, as the server numbers them: durable events, token batches from
 * reserved blocks, and gaps (numbers reserved and unused, the user's message).
 */
function turn() {
  const events = [event(2, 'status_update', { status: 'thinking' })];
  for (const seq of [3, 4]) events.push(event(seq, 'token'));
  for (let seq = 35; seq < 80; seq++) if (seq % 7 !== 0) events.push(event(seq));
  events.push(event(80, 'status_update', { status: 'awaiting_approval' }));
  events.push(event(81, 'done', { status: 'awaiting_approval' }));
  for (let seq = 83; seq < 95; seq++) events.push(event(seq));
  for (const seq of [95, 96, 97]) events.push(event(seq, 'token'));
  events.push(event(130, 'usage'), event(131, 'done', { status: 'completed' }));
  return events;
}

test('any arrival order, any replay split, any catch-ups: strict order, nothing stored lost', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const next = random(seed);
    const all = turn();
    const durable = all.filter((e) => e.type !== 'token');
    // Arrival: mostly in order, with windows shuffled (a replay's ties, concurrent steps).
    const arrivals = [];
    for (let i = 0; i < all.length;) {
      const size = 1 + Math.floor(next() * 8);
      arrivals.push(...shuffle(all.slice(i, i + size), next));
      i += size;
    }
    const seen = { events: [], late: [] };
    let lastSnapshot = 0;
    const sequencer = new Sequencer({
      onEvent: (e) => {
        if (e.type !== 'token') assert.ok(e.seq > lastSnapshot, `seed ${seed}: ${e.seq} after snapshot ${lastSnapshot}`);
        seen.events.push(e.seq);
      },
      onSnapshot: (x) => { lastSnapshot = x.seq; },
      onLate: (e) => seen.late.push(e.seq),
    });
    const snapshots = [];
    let arrived = 0;
    let reading = null; // the seq of the snapshot a catch-up is reading (what was stored)
    for (const e of arrivals) {
      const roll = next();
      if (roll < 0.25) sequencer.replayed(e);
      else sequencer.live(e);
      arrived = Math.max(arrived, e.seq);
      if (roll > 0.9 && reading === null) {
        sequencer.hold();
        reading = arrived;
      } else if (roll > 0.8 && reading !== null) {
        sequencer.release({ seq: reading, plans: [] });
        snapshots.push(reading);
        reading = null;
      } else if (roll < 0.05) {
        sequencer.flushReplay();
      }
    }
    sequencer.release({ seq: arrived, plans: [] }); // the catch-up after the last `done`
    snapshots.push(arrived);
    const delivered = seen.events;
    for (let i = 1; i < delivered.length; i++) {
      assert.ok(delivered[i] > delivered[i - 1], `seed ${seed}: ${delivered[i - 1]} then ${delivered[i]}`);
    }
    for (const e of durable) {
      const kept = delivered.includes(e.seq) || snapshots.some((s) => s >= e.seq);
      assert.ok(kept, `seed ${seed}: ${e.seq} was neither delivered nor in a snapshot`);
    }
    for (const late of seen.late) {
      assert.ok(snapshots.some((s) => s >= late), `seed ${seed}: late ${late} never read back`);
    }
  }
});
