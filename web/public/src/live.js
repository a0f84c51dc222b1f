// A session, kept current: the private Realtime channel `session:<id>` for live events, and
// HTTP reads to catch up (on open, after every reconnect, and when a turn ends).
//
// Order of work, so nothing falls between the two sources:
//   1. join the channel; events that arrive while we read are held back;
//   2. read the session (its `last_seq` is the snapshot's seq), the timeline after the last
//      seq we hold, and the detail of every plan that is new or still open;
//   3. apply the snapshot, then the held events (sorted by seq; older state never wins, see
//      session_state.js); from then on apply events as they come.
//
// After a dropped connection the channel is joined anew, with replay: Realtime first sends the
// events stored since a second before the last one we applied (their transactions sent them,
// docs/events.md). They were stored before the join, so they are older than the snapshot the
// catch-up then reads: they are applied at once, and the view is current before the reads
// answer. An event whose seq was applied already is dropped (a replay overlaps what we had).

import { applyEvent, applyPlanDetail, applyTimeline, emptySession, openPlanIds } from './session_state.js';

const REPLAY_LIMIT = 25; // hosted Realtime's most

const CHANNEL_STATES = {
  SUBSCRIBED: 'live',
  CHANNEL_ERROR: 'reconnecting',
  TIMED_OUT: 'reconnecting',
  CLOSED: 'offline',
};

export class SessionFeed {
  constructor({ client, api, sessionId, onChange }) {
    this.client = client;
    this.api = api;
    this.state = emptySession(sessionId);
    this.onChange = onChange;
    this.connection = 'connecting';
    this.held = null; // events received during a catch-up (null: none running)
    this.catching = null; // the catch-up running, if any
    this.again = false; // asked for while one ran: run once more after it
    this.wanted = new Set(); // plans to re-read at the next catch-up
    this.error = null; // why the last catch-up failed
    this.closed = false;
    this.joined = null; // resolves open() at the channel's first status
    this.subscribed = false; // the channel is joined (a drop after this rejoins with replay)
    this.applied = new Set(); // seqs of the events applied
    this.lastTs = 0; // the newest applied event's `ts` (ms): where a replay starts
  }

  get sessionId() {
    return this.state.id;
  }

  async open() {
    this.held = []; // hold events from the first moment: the first catch-up is coming
    // Hand Realtime the user's token before joining: a private channel refuses the anon key.
    await this.client.realtime.setAuth();
    this.#join(null);
    // Joined (or refused: then the catch-up tells why) before anything is sent to this session.
    await new Promise((resolve) => { this.joined = resolve; });
    await (this.catching || this.catchUp());
  }

  #join(since) {
    const config = since === null
      ? { private: true }
      : { private: true, broadcast: { replay: { since, limit: REPLAY_LIMIT } } };
    const channel = this.client
      .channel(`session:${this.sessionId}`, { config })
      .on('broadcast', { event: '*' }, ({ payload, meta }) => this.#receive(payload, meta))
      .subscribe((status) => channel === this.channel && this.#channelStatus(status));
    this.channel = channel;
  }

  async #rejoin() {
    // realtime-js would rejoin this channel with the config it was made with; a new channel
    // replays from a second before the last event applied (its `ts`: the server's clock).
    const dropped = this.channel;
    this.channel = null;
    await this.client.removeChannel(dropped);
    const last = this.lastTs || Date.parse(this.state.session?.last_message_at ?? '');
    if (!this.closed) this.#join(last > 0 ? last - 1000 : null);
  }

  close() {
    this.closed = true;
    if (this.channel) this.client.removeChannel(this.channel);
  }

  /**
   * Read what the tables hold beyond what we have, then apply the held events. Asked for while
   * one runs, it runs once more afterwards (with every plan asked for meanwhile).
   */
  catchUp(planIds = []) {
    planIds.forEach((id) => this.wanted.add(id));
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

  async #read() {
    const state = this.state;
    const wanted = [...this.wanted];
    this.wanted.clear();
    this.held = this.held || [];
    try {
      const session = await this.api.getSession(this.sessionId); // its last_seq: the snapshot's
      const entries = await this.api.timeline(this.sessionId, state.lastEntrySeq);
      const planIds = new Set([...openPlanIds(state), ...wanted]);
      for (const entry of entries) if (entry.plan_id && !state.plans.has(entry.plan_id)) planIds.add(entry.plan_id);
      // The first read takes every turn of the session in one call; later ones, the new or open.
      const details = state.plans.size === 0 && planIds.size > 0
        ? await this.api.sessionPlans(this.sessionId)
        : await Promise.all([...planIds].map((id) => this.api.plan(id)));
      state.session = session;
      applyTimeline(state, entries);
      for (const detail of details) applyPlanDetail(state, detail, session.last_seq);
      this.error = null;
    } catch (error) {
      if (error.status === 404) {
        state.missing = true;
        this.close();
      } else {
        this.error = error; // shown; the next reconnect or turn end reads again
      }
    } finally {
      const held = this.held.sort((a, b) => a.seq - b.seq);
      this.held = null;
      for (const event of held) this.#apply(event);
      this.#changed();
    }
  }

  #receive(event, meta) {
    if (!event || event.session_id !== this.sessionId || this.applied.has(event.seq)) return;
    // Held while a snapshot is read, unless replayed: stored before we joined, older than
    // any snapshot read since.
    if (this.held && !meta?.replayed) {
      this.held.push(event);
      return;
    }
    this.#apply(event);
    this.#changed();
  }

  #apply(event) {
    if (this.applied.has(event.seq)) return;
    this.applied.add(event.seq);
    this.lastTs = Math.max(this.lastTs, Date.parse(event.ts) || 0);
    applyEvent(this.state, event);
    // The turn's rows (user message, answer, final accounting) are in the tables now.
    if (event.type === 'done') this.catchUp([event.plan_id]);
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
    if (!this.closed || this.state.missing) this.onChange(this);
  }
}
