// @parley/client/react — a session in a React component: `useParleySession(sessionId)` runs a
// `watchSession()` while the component is mounted and gives its state as it changes — the
// events, the turns (status, pending approvals, the planner's texts, the answer), the
// connection and the error — with `send` and `decide`. React is a peer dependency of this entry
// only: the rest of the package never imports it.

import { createContext, createElement, useCallback, useContext, useEffect, useState } from 'react';
import { TERMINAL } from './sequencer.js';
import { watchSession } from './watch.js';

const ParleyContext = createContext(null);

/**
 * Gives `useParleySession` its clients: `<ParleyProvider client={parley} supabase={supabase}>`.
 * @param {{ client: any, supabase: any, children?: any }} props
 */
export function ParleyProvider({ client, supabase, children }) {
  return createElement(ParleyContext.Provider, { value: { client, supabase } }, children);
}

const EMPTY = Object.freeze({
  session: null, events: [], turns: [], connection: 'connecting', error: null, ready: false, missing: false,
});

/**
 * One session, current: its events and turns, the connection, the error, and `send` / `decide`.
 * The watch starts when the component mounts (or `sessionId` changes) and closes when it
 * unmounts. `sessionId` null: nothing is watched.
 * @param {string | null} sessionId
 * @param {{ client?: any, supabase?: any }} [options] the clients, when no `ParleyProvider` gives them
 */
export function useParleySession(sessionId, options = {}) {
  const context = useContext(ParleyContext);
  const client = options.client ?? context?.client;
  const supabase = options.supabase ?? context?.supabase;
  if (!client || !supabase) throw new TypeError('useParleySession: give client and supabase (options, or a ParleyProvider)');
  const [state, setState] = useState(EMPTY);

  useEffect(() => {
    if (!sessionId) return undefined;
    const turns = new Turns();
    const watch = watchSession({
      client, supabase, sessionId,
      onEvent: (event) => turns.event(event),
      onSnapshot: (snapshot) => turns.snapshot(snapshot),
      onTurnEnd: (end) => turns.end(end),
      onChange: () => setState(turns.view(watch)),
    });
    let mounted = true;
    const settled = (ready) => () => {
      turns.ready = ready;
      if (mounted) setState(turns.view(watch));
    };
    watch.ready.then(settled(true), settled(false)); // refused: `error` says why
    return () => {
      mounted = false;
      watch.close();
      setState(EMPTY);
    };
  }, [client, supabase, sessionId]);

  const send = useCallback(
    (message, init) => client.send({ session_id: sessionId, message }, init),
    [client, sessionId],
  );
  const decide = useCallback(
    (planId, approvalId, decision, text) => client.decide(planId, approvalId, text == null ? { decision } : { decision, text }),
    [client],
  );
  return { ...state, send, decide };
}

/** The turns of one session, from what its watch delivers. */
class Turns {
  constructor() {
    this.events = [];
    this.plans = new Map(); // plan id → { planId, firstSeq, status, statusSeq, plan, pending, end, done }
    this.session = null;
    this.ready = false; // the watch's `ready` resolved
  }

  #turn(planId) {
    if (!this.plans.has(planId)) {
      this.plans.set(planId, { planId, firstSeq: Infinity, status: 'pending', statusSeq: 0, plan: null, pending: [], end: null, done: null });
    }
    return this.plans.get(planId);
  }

  event(event) {
    this.events = [...this.events, event];
    if (!event.plan_id) return;
    const turn = this.#turn(event.plan_id);
    turn.firstSeq = Math.min(turn.firstSeq, event.seq);
    const status = ['status_update', 'done'].includes(event.type) ? event.data?.status : null;
    if (status && event.seq > turn.statusSeq) {
      turn.status = status === 'thinking' ? 'executing' : status;
      turn.statusSeq = event.seq;
      if (event.type === 'done') turn.done = event;
      if (status === 'awaiting_approval' && event.data.approvals) turn.pending = event.data.approvals;
      else if (status !== 'awaiting_approval') turn.pending = [];
    }
  }

  snapshot({ seq, session, entries, plans }) {
    this.session = session;
    for (const entry of entries) {
      if (entry.plan_id) {
        const turn = this.#turn(entry.plan_id);
        turn.firstSeq = Math.min(turn.firstSeq, entry.seq);
      }
    }
    for (const plan of plans) {
      const turn = this.#turn(plan.id);
      turn.plan = plan;
      if (seq >= turn.statusSeq) {
        turn.status = plan.status;
        turn.statusSeq = seq;
        turn.pending = (plan.approvals || []).filter((a) => a.status === 'pending');
      }
    }
  }

  end(end) {
    this.#turn(end.planId).end = end;
  }

  view(watch) {
    const turns = [...this.plans.values()].sort((a, b) => a.firstSeq - b.firstSeq).map((turn) => {
      const texts = watch.texts(turn.planId);
      const last = texts.at(-1);
      const answer = turn.status === 'completed' ? (last?.text ?? turn.done?.data?.answer ?? null) : null;
      return {
        planId: turn.planId, status: turn.status, ended: TERMINAL.has(turn.status), plan: turn.plan,
        pending: turn.pending, texts, answer, end: turn.end,
      };
    });
    return {
      session: watch.session ?? this.session, events: this.events, turns, connection: watch.connection,
      error: watch.error, ready: this.ready, missing: watch.missing,
    };
  }
}
