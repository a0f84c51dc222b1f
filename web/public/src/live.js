// A session, kept current for the view: `watchSession()` of @parley/client does the live work
// (the private channel `session:<id>`, replay after a dropped socket, catch-up from the tables
// when joined, after each reconnect and after each `done`, each event once and in `seq` order);
// this file applies what it delivers to the view's state (session_state.js).

import { watchSession } from '@parley/client';
import { applyEvent, applyPlanDetail, applyTexts, applyTimeline, emptySession } from './session_state.js';

export class SessionFeed {
  constructor({ client, api, sessionId, onChange }) {
    this.state = emptySession(sessionId);
    this.watch = watchSession({
      client: api,
      supabase: client,
      sessionId,
      onEvent: (event) => applyEvent(this.state, event),
      onSnapshot: (snapshot) => this.#snapshot(snapshot),
      onText: (planId, texts) => applyTexts(this.state, planId, texts),
      onChange: () => {
        this.state.missing = this.watch.missing;
        onChange(this);
      },
    });
  }

  /** Joined, and the tables read once (rejects when Realtime refuses the channel). */
  open() {
    return this.watch.ready;
  }

  close() {
    this.watch.close();
  }

  /** Read the tables again (and these plans: a turn just sent, decided or cancelled). */
  catchUp(planIds = []) {
    return this.watch.catchUp(planIds);
  }

  /** `live`, `connecting`, `reconnecting`, `offline`, or `failed` (Realtime refused or closed
   * the channel: `error` says why). */
  get connection() {
    return this.watch.connection;
  }

  /** Why the channel failed, or why the last catch-up failed (shown; the next one reads again). */
  get error() {
    return this.watch.error;
  }

  // The session row, the timeline entries after the last read, and each plan read, at the
  // session's `last_seq` (`seq`): events up to it are in them.
  #snapshot({ seq, session, entries, plans }) {
    this.state.session = session;
    applyTimeline(this.state, entries);
    for (const detail of plans) applyPlanDetail(this.state, detail, seq);
  }
}
