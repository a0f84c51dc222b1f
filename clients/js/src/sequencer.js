// Puts a session's events in `seq` order, whatever order they arrive in, and tells what the
// tables must be read for. Pure: no I/O, no timers (watch.js drives it).
//
// Where events come from, and how each is taken:
//
// * live (the channel, as they are committed): delivered at once, unless a catch-up is reading
//   the tables — then held, and delivered sorted: those the snapshot holds too before it, the
//   newer ones after it;
// * replayed (on a join with replay): held in a batch and delivered sorted when the batch is
//   flushed. Hosted Realtime replays `realtime.messages` by insertion time, and one
//   transaction's events share it, so a replay comes in any order: `… 46 45 44 48 47`;
// * a snapshot (the tables read by a catch-up, at the session's `last_seq`): it holds every
//   stored event up to that seq.
//
// What is delivered: each event once, every one with a higher `seq` than the one before (and
// than the snapshot before it). A stored event at or below the last snapshot's seq that
// arrives after the snapshot was handed over is in it, and dropped. One that arrives
// after a higher seq was delivered, and is not covered by a snapshot, is *late*: it is not
// delivered out of order; `onLate` asks for a catch-up, whose snapshot holds it.
//
// `token` batches are not stored (their numbers are reserved before the call that streams
// them), so no snapshot covers them: one is delivered if its seq is above every event
// delivered before it and its plan has not ended since; otherwise its words are in the stored
// answer, and it is dropped.

/** The statuses a plan ends in. */
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export class Sequencer {
  /**
   * @param {{ onEvent: (event: any) => void, onSnapshot?: (snapshot: any) => void,
   *   onLate?: (event: any) => void }} handlers
   */
  constructor({ onEvent, onSnapshot = () => {}, onLate = () => {} }) {
    this.onEvent = onEvent;
    this.onSnapshot = onSnapshot;
    this.onLate = onLate;
    this.high = 0; // the highest seq delivered
    this.covered = 0; // the last snapshot's seq: stored events up to it are in it
    this.seen = new Set(); // seqs delivered
    this.ended = new Map(); // plan id → the seq its plan had ended at (tokens below it are old)
    this.held = null; // live events held while a catch-up reads (null: none reading)
    this.replay = new Map(); // seq → replayed event not yet delivered
  }

  /** A live event from the channel. */
  live(event) {
    if (this.seen.has(event.seq)) return;
    this.flushReplay(); // a live event follows its join's replay
    if (this.held) this.held.push(event);
    else this.#offer(event);
  }

  /** A replayed event: kept for the batch (`flushReplay` delivers it). */
  replayed(event) {
    if (!this.seen.has(event.seq)) this.replay.set(event.seq, event);
  }

  /** How many replayed events wait for the flush. */
  get pendingReplay() {
    return this.replay.size;
  }

  /** The replayed batch is complete (or as complete as it will be): deliver it sorted. */
  flushReplay() {
    if (this.replay.size === 0) return;
    const batch = [...this.replay.values()].sort(bySeq);
    this.replay.clear();
    for (const event of batch) this.#offer(event);
  }

  /** A catch-up starts reading the tables: hold live events until its snapshot. */
  hold() {
    this.held = this.held || [];
  }

  /**
   * The catch-up is over: deliver the replayed batch, then the snapshot (if the reads
   * succeeded; `snapshot.seq` is the session's `last_seq` read first, and `snapshot.plans` the
   * plan details read after it), then the held events in seq order.
   */
  release(snapshot) {
    this.flushReplay();
    const held = (this.held || []).sort(bySeq);
    this.held = null;
    const at = snapshot ? snapshot.seq : Infinity;
    // Held events the snapshot also holds come first: they were committed before it was read.
    for (const event of held) if (event.seq <= at) this.#offer(event);
    if (snapshot) {
      this.covered = Math.max(this.covered, snapshot.seq);
      for (const plan of snapshot.plans || []) {
        if (TERMINAL.has(plan.status)) this.#ended(plan.id, snapshot.seq);
      }
      this.onSnapshot(snapshot);
    }
    for (const event of held) if (event.seq > at) this.#offer(event);
  }

  #offer(event) {
    if (this.seen.has(event.seq)) return;
    if (event.type === 'token') {
      if (event.seq <= this.high || event.seq < (this.ended.get(event.plan_id) ?? 0)) return;
    } else if (event.seq <= this.covered) {
      return; // in the snapshot
    } else if (event.seq <= this.high) {
      this.onLate(event);
      return;
    }
    this.seen.add(event.seq);
    this.high = event.seq;
    if (event.type === 'done') this.#ended(event.plan_id, event.seq);
    this.onEvent(event);
  }

  #ended(planId, seq) {
    if (planId) this.ended.set(planId, Math.max(this.ended.get(planId) ?? 0, seq));
  }
}

function bySeq(a, b) {
  return a.seq - b.seq;
}
