import type { ParleyClient } from './client.js';
import type { EventOf, ParleyEvent, PlanDetail, Session, TimelineEntry } from './index.js';
import type { StreamedText } from './texts.js';

/** The part of a supabase-js client `watchSession` uses (pass your `SupabaseClient`). */
export interface RealtimeHost {
  realtime: { setAuth(token?: string | null): Promise<void> };
  channel(name: string, options?: any): any;
  removeChannel(channel: any): Promise<unknown>;
}

/** What a catch-up read from the tables. */
export interface Snapshot {
  /** The session's `last_seq` when the reads began: every stored event up to it is here. */
  seq: number;
  session: Session;
  /** Timeline entries after the last one read before (human and agent messages, `seq` order). */
  entries: TimelineEntry[];
  /** The plans read: every plan of the session the first time, then the new and open ones. */
  plans: PlanDetail[];
}

/** A turn ended or paused, as the tables say after its `done`. */
export interface TurnEnd {
  planId: string;
  status: 'completed' | 'failed' | 'cancelled' | 'awaiting_approval';
  /** The session's `last_seq` when this was read: pass it to `turnEnd` to wait for the next. */
  seq: number;
  /** The plan, read after its `done`: its steps, executions, totals, and `approvals` (the
   * pending ones wait for a decision). */
  plan: PlanDetail;
  /** The `done` delivered for this end (its `data.answer`), or null when the end was read from
   * the tables only (the watch was not listening when it ended). */
  done: EventOf<'done'> | null;
}

export interface WatchOptions {
  client: ParleyClient;
  /** A supabase-js client holding the user's token (Supabase Auth, or `accessToken`). */
  supabase: RealtimeHost;
  sessionId: string;
  /** Each event once, each with a higher `seq` than the one before. */
  onEvent?: (event: ParleyEvent) => void;
  /** The tables read: on joining, after every reconnect, after each `done`, on `catchUp()`. */
  onSnapshot?: (snapshot: Snapshot) => void;
  /** A turn ended or paused after the watch began (ends found by the first read are only
   * recorded: `turnEnd` returns them). */
  onTurnEnd?: (end: TurnEnd) => void;
  /** A turn's planner texts changed: the words before its tool calls and its answer, as far as
   * they streamed (every batch in its place, late ones too), each the stored text once read. */
  onText?: (planId: string, texts: StreamedText[]) => void;
  /** Anything changed: events, a snapshot, the connection, an error. */
  onChange?: (watch: SessionWatch) => void;
  /** How long a replayed batch waits for more before it is delivered (ms; 50). */
  replayQuietMs?: number;
}

/** Realtime refused the channel (the join's error reply) or closed it saying why (a `system`
 * error: a token that expired, …). `reason` is Realtime's words, e.g. "Unauthorized: You do
 * not have permissions to read from this Channel topic: session:…". */
export declare class RealtimeError extends Error {
  constructor(reason: string, options?: { cause?: unknown });
  readonly reason: string;
}

export declare class SessionWatch {
  constructor(options: WatchOptions);
  readonly sessionId: string;
  /** Resolves when the channel is joined and the tables read the first time; rejects with a
   * `RealtimeError` when Realtime refuses the join. */
  readonly ready: Promise<void>;
  /** `connecting`, `live`, `reconnecting` (it rejoins by itself, with replay), `offline`, or
   * `failed` (Realtime refused or closed the channel: see `error`; the watch is closed). */
  readonly connection: 'connecting' | 'live' | 'reconnecting' | 'offline' | 'failed' | string;
  /** Why the watch failed (a `RealtimeError`: it is closed, and every waiting `turnEnd`
   * rejected with it), or why the last catch-up read failed (the next one retries); null:
   * neither. */
  readonly error: unknown;
  /** The session answered 404: missing, deleted, or another user's. The watch is closed. */
  readonly missing: boolean;
  readonly closed: boolean;
  /** The session row as last read. */
  readonly session: Session | null;
  /** The highest `seq` delivered. */
  readonly lastSeq: number;
  /** The planner's texts of a turn, in order (see `onText`). */
  texts(planId: string): StreamedText[];
  /** Read the tables now (and these plans). */
  catchUp(planIds?: string[]): Promise<void>;
  /** The turn's next end after `after` (the previous end's `seq`; 0: its first). Rejects when
   * the watch closes first (with its `RealtimeError` when it failed). */
  turnEnd(planId: string, after?: number): Promise<TurnEnd>;
  /** Leave the channel; pending `turnEnd`s reject. */
  close(): void;
}

export declare function watchSession(options: WatchOptions): SessionWatch;
