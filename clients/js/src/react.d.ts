import type { ReactNode } from 'react';
import type { ParleyClient } from './client.js';
import type { Approval, ChatTurnAccepted, ChatTurnReply, DecisionReply, ParleyEvent, PlanDetail, Session } from './index.js';
import type { StreamedText } from './texts.js';
import type { RealtimeHost, TurnEnd } from './watch.js';

/** Gives `useParleySession` its clients. */
export declare function ParleyProvider(props: { client: ParleyClient; supabase: RealtimeHost; children?: ReactNode }): ReactNode;

/** One turn of the session: a user message's plan, as the watch knows it. */
export interface ParleyTurn {
  planId: string;
  /** `pending`, `executing`, `awaiting_approval`, `completed`, `failed` or `cancelled`: the
   * newest the events or the tables said. */
  status: PlanDetail['status'];
  /** `completed`, `failed` or `cancelled`. */
  ended: boolean;
  /** The plan as the tables last gave it (steps, executions, costs, approvals); null before. */
  plan: PlanDetail | null;
  /** The approvals waiting for the user (decide them with `decide`). */
  pending: Approval[];
  /** The planner's texts in order: its words before each tool call, then its answer — as they
   * stream, every batch in its place, each the stored text once read. */
  texts: StreamedText[];
  /** The answer, once the turn completed: its last text. */
  answer: string | null;
  /** The turn's last end or pause as `watch.turnEnd` gives it (after the watch began). */
  end: TurnEnd | null;
}

export interface ParleySession {
  /** The session row as last read. */
  session: Session | null;
  /** Every event delivered, in `seq` order. */
  events: ParleyEvent[];
  /** The session's turns, oldest first. */
  turns: ParleyTurn[];
  /** `connecting`, `live`, `reconnecting`, `offline`, or `failed` (see `error`). */
  connection: string;
  /** A `RealtimeError` when Realtime refused or closed the channel (the watch ended), or why
   * the last read of the tables failed; null: neither. */
  error: unknown;
  /** Joined, and the tables read once. */
  ready: boolean;
  /** The session was not found (missing, deleted, or another user's). */
  missing: boolean;
  /** Send a message to the session (answered at once: `Prefer: respond-async`). */
  send(message: string, init?: { signal?: AbortSignal }): Promise<ChatTurnAccepted | ChatTurnReply>;
  /** Decide an approval (answered at once; the turn's progress comes over the channel). */
  decide(planId: string, approvalId: string, decision: 'approve' | 'reject' | 'answer', text?: string | null): Promise<DecisionReply>;
}

/**
 * A session, current, in a React component: a `watchSession()` while it is mounted. The
 * clients come from `options` or a `ParleyProvider`; `sessionId` null watches nothing.
 */
export declare function useParleySession(
  sessionId: string | null,
  options?: { client?: ParleyClient; supabase?: RealtimeHost },
): ParleySession;
