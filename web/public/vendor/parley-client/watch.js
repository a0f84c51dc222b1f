// watchSession(): a session kept current — its private Realtime channel `session:<id>` for live
// events, and the tables (over HTTP) to catch up: when joined, after every reconnect, and when
// a turn ends.
//
// Order of work, so nothing falls between the two sources:
//   1. join the channel; live events that arrive while the tables are read are held;
//   2. read the session (its `last_seq` is the snapshot's seq), the timeline after the last
//      seq read, and the detail of every plan that is new or still open (on the first read,
//      every plan of the session in one call);
//   3. hand over the snapshot, then the held events in seq order (sequencer.js).
//
// After a dropped connection the channel is joined anew with replay: Realtime first sends the
// events stored since a second before the last one delivered. They come in any order, so they
// are delivered as one sorted batch — when a live event arrives, when `limit` of them came,
// when the catch-up's reads answer, or after `replayQuietMs` without another — and, stored
// before the join, ahead of the snapshot the catch-up then reads.
//
// A turn's end is taken from the tables: after its `done` is delivered, the plan is read again,
// and the turn ended (or paused for approval) when the detail says so. Replay order, a `done`
// sent again, or a missed event cannot fake it.

import { Sequencer, TERMINAL } from './sequencer.js';

const REPLAY_LIMIT = 25; // hosted Realtime's most
const ENDS = new Set([...TERMINAL, 'awaiting_approval']);
const CHANNEL_STATES = {
  SUBSCRIBED: 'live',
  CHANNEL_ERROR: 'reconnecting',
  TIMED_OUT: 'reconnecting',
  CLOSED: 'offline',
};

/**
 * Watch one session. Returns at once; `watch.ready` resolves when the channel is joined and
 * the tables read the first time.
 * @param {import('./watch.js').WatchOptions} options
 */
export function watchSession(options) {
  return new SessionWatch(options);
}

export class SessionWatch {
  constructor({
    client, supabase, sessionId, onEvent = () => {}, onSnapshot = () => {}, onTurnEnd = () => {},
    onChange = () => {}, replayQuietMs = 50,
  }) {
    if (!client || !supabase || !sessionId) throw new TypeError('watchSession: client, supabase and sessionId are needed');
    Object.assign(this, { client, supabase, sessionId, replayQuietMs });
    this.handlers = { onEvent, onSnapshot, onTurnEnd, onChange };
    /** @type {'connecting' | 'live' | 'reconnecting' | 'offline' | string} */
    this.connection = 'connecting';
    /** Why the last catch-up failed (null: it did not). */
    this.error = null;
    /** The session answered 404: it does not exist, was deleted, or is not the user's. */
    this.missing = false;
    this.closed = false;
    this.session = null; // the session row, as last read
    this.plans = new Map(); // plan id → its status, as last known
    this.ends = new Map(); // plan id → the turn's last end (turnEnd)
    this.dones = new Map(); // plan id → its last `done` delivered
    this.waiters = new Map(); // plan id → [{ after, resolve, reject }]
    this.lastEntrySeq = 0; // the highest timeline seq read: the next read starts after it
    this.lastTs = 0; // the newest delivered event's `ts` (ms): where a replay starts
    this.subscribed = false; // joined (a drop after this rejoins with replay)
    this.catching = null; // the catch-up running, if any
    this.again = false; // asked for while one ran: run once more after it
    this.wanted = new Set(); // plans to read at the next catch-up
    this.snapshots = 0;
    this.quiet = null; // the replay batch's flush timer
    this.sequencer = new Sequencer({
      onEvent: (event) => this.#deliver(event),
      onSnapshot: (snapshot) => this.handlers.onSnapshot(snapshot),
      onLate: (event) => this.catchUp(event.plan_id ? [event.plan_id] : []),
    });
    this.ready = this.#open();
  }

  /** The highest `seq` delivered so far. */
  get lastSeq() {
    return this.sequencer.high;
  }

  async #open() {
    this.sequencer.hold(); // the first catch-up is coming
    // Realtime needs the user's token before the join: a private channel refuses the anon key.
    await this.supabase.realtime.setAuth();
    const joined = new Promise((resolve) => { this.joined = resolve; });
    this.#join(null);
    await joined; // joined, or refused: then the catch-up tells why
    await (this.catching || this.catchUp());
  }

  #join(since) {
    const config = since === null
      ? { private: true }
      : { private: true, broadcast: { replay: { since, limit: REPLAY_LIMIT } } };
    const channel = this.supabase
      .channel(`session:${this.sessionId}`, { config })
      .on('broadcast', { event: '*' }, ({ payload, meta }) => channel === this.channel && this.#receive(payload, meta))
      .subscribe((status) => channel === this.channel && this.#channelStatus(status));
    this.channel = channel;
  }

  async #rejoin() {
    // realtime-js would rejoin this channel with the config it was made with; a new channel
    // replays from a second before the last event delivered (its `ts`: the server's clock).
    const dropped = this.channel;
    this.channel = null;
    await this.supabase.removeChannel(dropped);
    const last = this.lastTs || Date.parse(this.session?.last_message_at ?? '');
    if (!this.closed) this.#join(last > 0 ? last - 1000 : null);
  }

  /** Leave the channel; nothing is delivered afterwards, and pending `turnEnd`s reject. */
  close() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.quiet);
    if (this.channel) this.supabase.removeChannel(this.channel);
    this.channel = null;
    for (const [, waiting] of this.waiters) {
      for (const waiter of waiting) waiter.reject(new Error(this.missing ? 'The session was not found' : 'The watch was closed'));
    }
    this.waiters.clear();
  }

  /**
   * Read what the tables hold beyond what was delivered (and these plans, whatever they are),
   * then deliver the held events. Asked for while one runs, it runs once more afterwards.
   * @param {string[]} [planIds]
   */
  catchUp(planIds = []) {
    planIds.forEach((id) => this.wanted.add(id));
    if (this.closed) return Promise.resolve();
    if (this.catching) {
      this.again = true;
      return this.catching;
    }
    this.catching = this.#read().finally(() => {
      this.catching = null;
      if (this.again && !this.closed) {
        this.again = false;
        this.catchUp();
      }
    });
    return this.catching;
  }

  /**
   * The turn's next end after `after` (a seq: pass the previous end's `seq` to wait for the
   * one after it): it completed, failed, was cancelled, or waits for approval — as the tables
   * say, read after its `done`.
   * @param {string} planId
   * @param {number} [after]
   */
  turnEnd(planId, after = 0) {
    const known = this.ends.get(planId);
    if (known && known.seq > after) return Promise.resolve(known);
    if (this.closed) return Promise.reject(new Error('The watch was closed'));
    const waiting = new Promise((resolve, reject) => {
      if (!this.waiters.has(planId)) this.waiters.set(planId, []);
      this.waiters.get(planId).push({ after, resolve, reject });
    });
    if (!known) this.catchUp([planId]); // it may have ended before we heard of it
    return waiting;
  }

  async #read() {
    const wanted = [...this.wanted];
    this.wanted.clear();
    this.sequencer.hold();
    let snapshot = null;
    try {
      const { client, sessionId } = this;
      const session = await client.chat.getSession(sessionId); // its last_seq: the snapshot's
      const entries = await client.timeline(sessionId, this.lastEntrySeq);
      const planIds = new Set([...this.#openPlans(), ...wanted]);
      for (const entry of entries) if (entry.plan_id && !this.plans.has(entry.plan_id)) planIds.add(entry.plan_id);
      // The first read takes every turn of the session in one call; later ones, the new or open.
      const plans = this.plans.size === 0 && planIds.size > 0
        ? await client.sessionPlans(sessionId)
        : await Promise.all([...planIds].map((id) => client.planner.getPlan(id)));
      snapshot = { seq: session.last_seq, session, entries, plans };
      this.session = session;
      for (const entry of entries) this.lastEntrySeq = Math.max(this.lastEntrySeq, entry.seq);
      for (const plan of plans) this.plans.set(plan.id, plan.status);
      this.error = null;
    } catch (error) {
      if (error?.status === 404) {
        this.missing = true;
        this.close();
      } else {
        this.error = error; // the next reconnect or turn end reads again
      }
    } finally {
      this.sequencer.release(snapshot);
      if (snapshot && !this.closed) this.#ends(snapshot);
      this.#changed();
    }
  }

  #openPlans() {
    return [...this.plans].filter(([, status]) => !TERMINAL.has(status)).map(([id]) => id);
  }

  /** Record the turns the snapshot shows ended or paused; announce the new ones. */
  #ends(snapshot) {
    const first = this.snapshots++ === 0;
    for (const plan of snapshot.plans) {
      if (!ENDS.has(plan.status)) continue;
      const pending = (plan.approvals || []).filter((a) => a.status === 'pending').map((a) => a.id).sort();
      const key = `${plan.status} ${pending.join(' ')}`;
      if (this.ends.get(plan.id)?.key === key) continue;
      const last = this.dones.get(plan.id);
      const done = last?.data?.status === plan.status ? last : null;
      const end = { planId: plan.id, status: plan.status, seq: snapshot.seq, plan, done, key };
      this.ends.set(plan.id, end);
      if (!first) this.handlers.onTurnEnd(end);
      const waiting = this.waiters.get(plan.id) || [];
      const [ready, still] = partition(waiting, (w) => end.seq > w.after);
      if (still.length) this.waiters.set(plan.id, still);
      else this.waiters.delete(plan.id);
      ready.forEach((w) => w.resolve(end));
    }
  }

  #receive(event, meta) {
    if (this.closed || !event || event.session_id !== this.sessionId || typeof event.seq !== 'number') return;
    clearTimeout(this.quiet);
    if (!meta?.replayed) {
      this.sequencer.live(event);
    } else {
      // Replayed: stored before the join, so older than any snapshot read since: delivered as
      // soon as the batch is complete, without waiting for the reads.
      this.sequencer.replayed(event);
      if (this.sequencer.pendingReplay >= REPLAY_LIMIT) this.sequencer.flushReplay();
      else this.quiet = setTimeout(() => { this.sequencer.flushReplay(); this.#changed(); }, this.replayQuietMs);
    }
    this.#changed();
  }

  #deliver(event) {
    if (this.closed) return;
    if (event.plan_id) {
      const status = ['done', 'status_update'].includes(event.type) ? event.data?.status : undefined;
      if (status) this.plans.set(event.plan_id, status === 'thinking' ? 'executing' : status);
      else if (!this.plans.has(event.plan_id)) this.plans.set(event.plan_id, 'pending');
    }
    this.lastTs = Math.max(this.lastTs, Date.parse(event.ts) || 0);
    this.handlers.onEvent(event);
    // The turn's rows (user message, answer, final accounting) are in the tables now.
    if (event.type === 'done') {
      this.dones.set(event.plan_id, event);
      this.catchUp([event.plan_id]);
    }
  }

  #channelStatus(status) {
    this.connection = CHANNEL_STATES[status] || status.toLowerCase();
    if (status === 'SUBSCRIBED') {
      // Joined (again): what was sent while we were not subscribed is in the tables.
      this.subscribed = true;
      this.catchUp();
    } else if (this.subscribed && !this.closed) {
      // Dropped: join anew, with replay of what we missed.
      this.subscribed = false;
      this.#rejoin();
    }
    this.joined?.();
    this.joined = null;
    this.#changed();
  }

  #changed() {
    if (!this.closed || this.missing) this.handlers.onChange(this);
  }
}

function partition(list, test) {
  const yes = [];
  const no = [];
  for (const item of list) (test(item) ? yes : no).push(item);
  return [yes, no];
}
