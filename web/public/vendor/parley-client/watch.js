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
//
// The planner's streamed text is kept apart (texts.js): a token batch that arrives after later
// events cannot be delivered in seq order, but it still takes its place in its message's text
// (`onText`, `watch.texts(planId)`), and a message whose row the tables hold has its stored
// text — so no streamed word is lost, whatever arrived or did not.
//
// A watch fails loudly: when Realtime refuses the join (no permission to read the channel, a
// limit reached) or closes the channel with a reason (a token that expired and was not
// refreshed), the watch ends with a `RealtimeError` carrying Realtime's words — `ready`
// rejects with it if it was still pending, `watch.error` holds it, and every `turnEnd()`
// waiting rejects with it. A dropped socket is not a failure: the watch rejoins.

import { Sequencer, TERMINAL } from './sequencer.js';
import { StreamedTexts } from './texts.js';

const REPLAY_LIMIT = 25; // hosted Realtime's most

/** Realtime refused the channel, or closed it and said why (`reason`: Realtime's words). */
export class RealtimeError extends Error {
  /**
   * @param {string} reason
   * @param {{ cause?: unknown }} [options]
   */
  constructor(reason, options) {
    super(`Realtime: ${reason}`, options);
    this.name = 'RealtimeError';
    /** Realtime's reason, as it sent it. */
    this.reason = reason;
  }
}
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
    onText = () => {}, onChange = () => {}, replayQuietMs = 50,
  }) {
    if (!client || !supabase || !sessionId) throw new TypeError('watchSession: client, supabase and sessionId are needed');
    Object.assign(this, { client, supabase, sessionId, replayQuietMs });
    this.handlers = { onEvent, onSnapshot, onTurnEnd, onText, onChange };
    /** @type {'connecting' | 'live' | 'reconnecting' | 'offline' | 'failed' | string} */
    this.connection = 'connecting';
    /** Why the watch failed (a `RealtimeError`), or why the last catch-up failed (null: none). */
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
    this.closing = null; // why Realtime is closing the channel (a `system` error), if it said
    this.failure = null; // the RealtimeError the watch ended with, if it failed
    this.streamed = new StreamedTexts({ onText: (planId, texts) => this.handlers.onText(planId, texts) });
    this.sequencer = new Sequencer({
      onEvent: (event) => this.#deliver(event),
      onSnapshot: (snapshot) => this.handlers.onSnapshot(snapshot),
      onLate: (event) => this.catchUp(event.plan_id ? [event.plan_id] : []),
    });
    this.ready = this.#open();
    this.ready.catch(() => {}); // a watch nobody awaits fails through `error` and `onChange`
  }

  /** The highest `seq` delivered so far. */
  get lastSeq() {
    return this.sequencer.high;
  }

  /**
   * The planner's texts of a turn, in order — the words before its tool calls, then its answer —
   * as far as they streamed, every batch in its place, and each the stored text once read.
   * @param {string} planId
   */
  texts(planId) {
    return this.streamed.texts(planId);
  }

  async #open() {
    this.sequencer.hold(); // the first catch-up is coming
    // Realtime needs the user's token before the join: a private channel refuses the anon key.
    await this.supabase.realtime.setAuth();
    const joined = new Promise((resolve, reject) => { this.joined = { resolve, reject }; });
    this.#join(null);
    await joined; // joined or dropped (the catch-up reads the tables meanwhile); refused: throws
    await (this.catching || this.catchUp());
    if (this.failure) throw this.failure;
  }

  #join(since) {
    const config = since === null
      ? { private: true }
      : { private: true, broadcast: { replay: { since, limit: REPLAY_LIMIT } } };
    const channel = this.supabase
      .channel(`session:${this.sessionId}`, { config })
      .on('broadcast', { event: '*' }, ({ payload, meta }) => channel === this.channel && this.#receive(payload, meta))
      .on('system', {}, (payload) => channel === this.channel && this.#system(payload))
      .subscribe((status, error) => channel === this.channel && this.#channelStatus(status, error));
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
    const channel = this.channel;
    this.channel = null; // first: leaving reports the channel CLOSED, which is not news now
    if (channel) this.supabase.removeChannel(channel);
    const reason = this.#closedReason();
    for (const [, waiting] of this.waiters) {
      for (const waiter of waiting) waiter.reject(reason);
    }
    this.waiters.clear();
  }

  /** Why nothing more will come: the failure, the session's 404, or `close()`. */
  #closedReason() {
    return this.failure ?? new Error(this.missing ? 'The session was not found' : 'The watch was closed');
  }

  /** Realtime refused or closed the channel. A session never read may be missing (another
   * user's is refused too): then the watch ends `missing`, as a read would have ended it; else
   * with the `RealtimeError`. */
  async #refused(error) {
    if (!this.session) {
      const missing = await this.client.chat.getSession(this.sessionId).then(() => false, (e) => e?.status === 404);
      if (missing && !this.closed) {
        this.missing = true;
        this.joined?.resolve();
        this.joined = null;
        this.close();
        this.#changed();
        return;
      }
    }
    this.#fail(error);
  }

  /** Realtime refused or closed the channel: the watch ends with `error`, loudly. */
  #fail(error) {
    if (this.closed) return;
    this.failure = error;
    this.error = error;
    this.connection = 'failed';
    this.joined?.reject(error);
    this.joined = null;
    this.close();
    this.handlers.onChange(this);
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
    if (this.closed) return Promise.reject(this.#closedReason());
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
      for (const entry of entries) this.streamed.entry(entry);
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
    if (event.type === 'token') this.streamed.token(event); // its text has a place, whenever it comes
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
    this.streamed.event(event);
    this.handlers.onEvent(event);
    // The turn's rows (user message, answer, final accounting) are in the tables now.
    if (event.type === 'done') {
      this.dones.set(event.plan_id, event);
      this.catchUp([event.plan_id]);
    }
  }

  /** A `system` message: an error one says why Realtime closes the channel next. */
  #system(payload) {
    if (payload?.status === 'error' && payload.extension !== 'postgres_changes') {
      this.closing = String(payload.message || 'the channel was closed');
    }
  }

  #channelStatus(status, error) {
    if (this.closed) return;
    // A join Realtime answered with an error (its reply's `{ reason }`; a dropped socket's
    // error holds a close event, with a numeric `code`), or a close it announced: final.
    const reply = status === 'CHANNEL_ERROR' ? error?.cause : null;
    const refused = typeof reply?.reason === 'string' && reply.reason !== '' && typeof reply.code !== 'number';
    if (refused || (status === 'CLOSED' && this.closing)) {
      const reason = refused ? reply.reason : this.closing;
      this.#refused(new RealtimeError(reason, { cause: error }));
      return;
    }
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
    this.joined?.resolve();
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
